package badinput

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/readiness"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/validation"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// Prefix starts the name of every object the cases create.
const Prefix = "badinput-"

// NodeClassName is the KWOKNodeClass the cases' NodePools use; the first
// case that needs it creates it.
const NodeClassName = Prefix + "kwok"

// QuarantineTaint is the taint of the cases' tainted NodePool, which no
// pod tolerates.
var QuarantineTaint = corev1.Taint{Key: "badinput.karp.sh/quarantine", Value: "true", Effect: corev1.TaintEffectNoSchedule}

const (
	reqsPath    = "spec.template.spec.requirements"
	budgetsPath = "spec.disruption.budgets"
	podReqPath  = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator"
)

// Cases returns the bad input, one case per kind of mistake. Every call
// returns fresh cases.
func Cases() []Case {
	var cases []Case
	for _, group := range [][]Case{nodePoolRejections(), nodeClassRejections(), podCases(), annotationCases(), acceptedNodePools()} {
		cases = append(cases, group...)
	}
	return cases
}

// nodePoolRejections are NodePools the API server refuses.
func nodePoolRejections() []Case {
	return []Case{
		rejectNodePool("nodepool-unknown-operator", reqsPath+"[0].operator", `Unsupported value: "Between"`,
			func(w *test.NodePoolWrapper) { w.Requirement("example.com/tier", "Between", "1") }, nil),
		rejectNodePool("nodepool-restricted-label", "spec.template.metadata.labels", `label domain "karpenter.sh" is restricted`,
			func(w *test.NodePoolWrapper) { w.Labels(map[string]string{"karpenter.sh/team": "a"}) }, nil),
		rejectNodePool("nodepool-restricted-requirement", reqsPath+"[0].key", `label "kubernetes.io/hostname" is restricted`,
			func(w *test.NodePoolWrapper) { w.Requirement(corev1.LabelHostname, corev1.NodeSelectorOpIn, "node-1") }, nil),
		rejectNodePool("nodepool-gt-not-an-integer", reqsPath+"[0].values", "must have a single non-negative integer value",
			func(w *test.NodePoolWrapper) { w.Requirement("example.com/generation", corev1.NodeSelectorOpGt, "new") }, nil),
		rejectNodePool("nodepool-budget-nodes-over-100-percent", budgetsPath+"[0].nodes", `Invalid value: "150%"`,
			func(w *test.NodePoolWrapper) { w.Budgets(karpv1.Budget{Nodes: "150%"}) }, nil),
		rejectNodePool("nodepool-budget-schedule-without-duration", budgetsPath, "'schedule' must be set with 'duration'",
			func(w *test.NodePoolWrapper) { w.Budgets(karpv1.Budget{Nodes: "0", Schedule: ptr.To("@daily")}) }, nil),
		rejectNodePool("nodepool-budget-schedule-not-cron", budgetsPath+"[0].schedule", `Invalid value: "weekdays"`,
			func(w *test.NodePoolWrapper) {
				w.Budgets(karpv1.Budget{Nodes: "0", Schedule: ptr.To("weekdays"), Duration: &metav1.Duration{Duration: 8 * 3600e9}})
			}, nil),
		rejectNodePool("nodepool-budget-unknown-reason", budgetsPath+"[0].reasons[0]", `Unsupported value: "Expired"`,
			func(w *test.NodePoolWrapper) {
				w.Budgets(karpv1.Budget{Nodes: "1", Reasons: []karpv1.DisruptionReason{"Expired"}})
			}, nil),
		rejectNodePool("nodepool-expireafter-in-days", "spec.template.spec.expireAfter", `Invalid value: "30d"`, nil,
			set("30d", "spec", "template", "spec", "expireAfter")),
		rejectNodePool("nodepool-consolidateafter-a-word", "spec.disruption.consolidateAfter", `Invalid value: "forever"`, nil,
			set("forever", "spec", "disruption", "consolidateAfter")),
		rejectNodePool("nodepool-consolidation-policy-unknown", "spec.disruption.consolidationPolicy", `Unsupported value: "Always"`,
			func(w *test.NodePoolWrapper) { w.ConsolidationPolicy("Always") }, nil),
		rejectNodePool("nodepool-limit-not-a-quantity", "spec.limits.cpu", `Invalid value: "lots": spec.limits.cpu in body should match`, nil,
			set("lots", "spec", "limits", "cpu")),
		rejectNodePool("nodepool-limits-a-string", "spec.limits", `spec.limits in body must be of type object: "string"`, nil,
			set("100", "spec", "limits")),
		rejectNodePool("nodepool-limit-a-list", "spec.limits.cpu", `spec.limits.cpu in body must be of type integer,string: "array"`, nil,
			set([]interface{}{"1"}, "spec", "limits", "cpu")),
		rejectNodePool("nodepool-weight-zero", "spec.weight", "should be greater than or equal to 1",
			func(w *test.NodePoolWrapper) { w.Weight(0) }, nil),
		rejectNodePool("nodepool-without-nodeclassref", "spec.template.spec.nodeClassRef", "Required value",
			func(w *test.NodePoolWrapper) { w.NodeClassRef(nil) }, nil),
	}
}

// nodeClassRejections are KWOKNodeClasses and EC2NodeClasses the API
// server refuses.
func nodeClassRejections() []Case {
	return []Case{
		{
			Name: "kwoknodeclass-delay-in-days",
			Object: func(string) client.Object {
				return edit(test.MakeKWOKNodeClass(Prefix+"kwok-days").Obj(), set("1d", "spec", "nodeRegistrationDelay"))
			},
			Rejection: &Rejection{Field: "spec.nodeRegistrationDelay", Message: `Invalid value: "1d"`},
		},
		{
			Name: "ec2nodeclass-no-subnets",
			Object: func(string) client.Object {
				return edit(ec2NodeClass(Prefix+"ec2-no-subnets"), set([]interface{}{}, "spec", "subnetSelectorTerms"))
			},
			Rejection: &Rejection{Field: "spec.subnetSelectorTerms", Message: "subnetSelectorTerms cannot be empty"},
		},
		{
			Name: "ec2nodeclass-security-group-id-malformed",
			Object: func(string) client.Object {
				nc := ec2NodeClass(Prefix + "ec2-bad-sg")
				nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{ID: "group-1"}}
				return nc
			},
			Rejection: &Rejection{Field: "spec.securityGroupSelectorTerms[0].id", Message: `Invalid value: "group-1"`},
		},
	}
}

// podCases are pods the API server refuses and pods karp cannot help,
// which it tells so in a FailedScheduling event.
func podCases() []Case {
	return []Case{
		rejectPod("pod-unknown-operator", podReqPath, `Invalid value: "Between": not a valid selector operator`,
			test.NodeSelectorRequirement("example.com/tier", "Between", "1")),
		// Gte and Lte are karp's NodePool operators; pods cannot use them.
		rejectPod("pod-nodepool-only-operator", podReqPath, `Invalid value: "Gte": not a valid selector operator`,
			test.NodeSelectorRequirement("example.com/generation", karpv1.NodeSelectorOpGte, "3")),
		{
			Name: "pod-absurd-requests",
			Object: func(ns string) client.Object {
				return pod(ns, "absurd").Requests("cpu", "100000", "memory", "100Ti").Obj()
			},
			Event: failedScheduling("no instance type has 100000 cpu"),
		},
		{
			Name: "pod-impossible-zone",
			Object: func(ns string) client.Object {
				return pod(ns, "nowhere").Requests("cpu", "100m").
					NodeAffinityTerm(test.NodeSelectorRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "badinput-nowhere")).Obj()
			},
			// "no instance type satisfies ..." from a pool open to every
			// zone, "incompatible requirements: requires ..." from one that
			// lists its zones: both name the requirement.
			Event: failedScheduling("topology.kubernetes.io/zone In [badinput-nowhere]"),
		},
		{
			Name: "pod-unknown-extended-resource",
			Object: func(ns string) client.Object {
				return pod(ns, "unknown-resource").Requests("cpu", "100m", "example.com/fpga", "1").Limits("example.com/fpga", "1").Obj()
			},
			Event: failedScheduling("example.com/fpga"),
		},
		{
			Name: "pod-label-no-nodepool-offers",
			Object: func(ns string) client.Object {
				return pod(ns, "unknown-label").Requests("cpu", "100m").NodeSelector(map[string]string{"example.com/team": "badinput"}).Obj()
			},
			Event: failedScheduling("example.com/team"),
		},
		{
			Name: "pod-request-above-limit",
			Object: func(ns string) client.Object {
				return pod(ns, "request-above-limit").Requests("cpu", "2").Limits("cpu", "1").Obj()
			},
			Rejection: &Rejection{Field: "spec.containers[0].resources.requests", Message: "must be less than or equal to cpu limit"},
		},
		{
			Name: "pod-restricted-selector",
			Object: func(ns string) client.Object {
				return pod(ns, "restricted").Requests("cpu", "100m").NodeSelector(map[string]string{"karpenter.sh/custom": "x"}).Obj()
			},
			Event: failedScheduling("ignoring pod, nodeSelector karpenter.sh/custom: label karpenter.sh/custom is in the restricted domain karpenter.sh",
				"karp provisions for well-known labels"),
		},
		{
			Name: "pod-untolerated-taint",
			Setup: func(string) []client.Object {
				return []client.Object{nodePool("tainted").Weight(firstInMessages).Obj()}
			},
			Object: func(ns string) client.Object {
				return pod(ns, "untolerated").Requests("cpu", "100m").
					NodeSelector(map[string]string{karpv1.NodePoolLabelKey: Prefix + "tainted"}).Obj()
			},
			Event: failedScheduling("NodePool badinput-tainted: taint badinput.karp.sh/quarantine=true:NoSchedule not tolerated"),
		},
	}
}

// annotationCases are pods that run but carry a do-not-disrupt annotation
// karp cannot read: karp ignores it, and says so on the pod when it weighs
// disrupting the pod's node, or when a drain evicts the pod (a pod can land
// on a node whose disruption was decided before it existed).
func annotationCases() []Case {
	invalid := func(name, value, why string) Case {
		return Case{
			Name: name,
			Runs: true,
			Object: func(ns string) client.Object {
				w := pod(ns, name).Requests("cpu", "10m")
				w.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: value}
				return w.Obj()
			},
			Event: &Event{Reason: "InvalidDoNotDisruptAnnotation", Type: corev1.EventTypeWarning,
				Note: []string{"Invalid karpenter.sh/do-not-disrupt annotation: " + why + ", ignoring annotation"}},
		}
	}
	return []Case{
		invalid("pod-do-not-disrupt-maybe", "maybe", `"maybe" is not a duration`),
		invalid("pod-do-not-disrupt-negative", "-1h", `duration "-1h" must be positive`),
	}
}

// acceptedNodePools are NodePools the API server accepts that karp cannot
// use, and says why.
func acceptedNodePools() []Case {
	return []Case{
		{
			Name: "nodepool-missing-nodeclass",
			Object: func(string) client.Object {
				return nodePool("orphan").NodeClassRef(kwokv1alpha1.NodeClassReference(Prefix + "missing")).Obj()
			},
			Condition: &Condition{Type: karpv1.ConditionTypeNodeClassReady, Status: metav1.ConditionFalse, Reason: readiness.ReasonNodeClassNotFound,
				Message: []string{`NodeClass not found on cluster: KWOKNodeClass "badinput-missing" (group karpenter.kwok.sh)`}},
		},
		{
			// Under the kwok provider an EC2NodeClass is of no use, even
			// one that exists.
			Name: "nodepool-nodeclass-kind-not-served",
			Object: func(string) client.Object {
				return nodePool("foreign-kind").NodeClassRef(awsv1.NodeClassReference(Prefix + "ec2")).Obj()
			},
			Condition: &Condition{Type: karpv1.ConditionTypeNodeClassReady, Status: metav1.ConditionFalse, Reason: readiness.ReasonNodeClassNotFound,
				Message: []string{"kind EC2NodeClass of group karpenter.k8s.aws is not served by the kwok cloud provider"}},
		},
		{
			Name: "nodepool-duplicate-taint",
			Object: func(string) client.Object {
				return nodePool("duplicate-taint").StartupTaint(QuarantineTaint).Obj()
			},
			Condition: &Condition{Type: karpv1.ConditionTypeValidationSucceeded, Status: metav1.ConditionFalse, Reason: "NodePoolValidationFailed",
				Message: []string{"startupTaints[0]: duplicate taint badinput.karp.sh/quarantine:NoSchedule (also taints[0])"}},
		},
		{
			// The schema's pattern takes any five fields; cron does not.
			Name: "nodepool-budget-schedule-out-of-range",
			Object: func(string) client.Object {
				return nodePool("budget-minute-61").Budgets(karpv1.Budget{Nodes: "0", Schedule: ptr.To("61 * * * *"),
					Duration: &metav1.Duration{Duration: time.Hour}}).Obj()
			},
			Condition: &Condition{Type: validation.ConditionTypeDisruptionBudgetsValid, Status: metav1.ConditionFalse,
				Reason: validation.ReasonInvalidDisruptionBudget, Message: []string{`budgets[0]: parsing schedule "61 * * * *"`}},
		},
		{
			Name: "nodepool-budget-nodes-overflow",
			Object: func(string) client.Object {
				return nodePool("budget-overflow").Budgets(karpv1.Budget{Nodes: "99999999999999999999"}).Obj()
			},
			Event: &Event{Reason: validation.ReasonInvalidDisruptionBudget, Type: corev1.EventTypeWarning,
				Note: []string{`budgets[0]: parsing nodes "99999999999999999999"`}},
		},
		{
			// The NodePool is the bad input; karp says so on the pod that
			// selects it.
			Name: "nodepool-min-values-unmet",
			Setup: func(string) []client.Object {
				return []client.Object{nodePool("min-values").Weight(firstInMessages).Requirement(kwokv1alpha1.InstanceFamilyLabelKey, corev1.NodeSelectorOpIn, "m5").
					RequirementWithMinValues(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpExists, 50).Obj()}
			},
			Object: func(ns string) client.Object {
				return pod(ns, "min-values").Requests("cpu", "100m").Toleration(quarantined).
					NodeSelector(map[string]string{karpv1.NodePoolLabelKey: Prefix + "min-values"}).Obj()
			},
			Event: &Event{Reason: "FailedScheduling", Type: corev1.EventTypeWarning, Note: []string{"minValues"}},
		},
		{
			Name: "nodepool-no-instance-type",
			Setup: func(ns string) []client.Object {
				return []client.Object{pod(ns, "no-type").Requests("cpu", "100m").Toleration(quarantined).
					NodeSelector(map[string]string{karpv1.NodePoolLabelKey: Prefix + "no-type"}).Obj()}
			},
			Object: func(string) client.Object {
				return nodePool("no-type").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, Prefix+"no-such-type").Obj()
			},
			Event: &Event{Reason: "NoCompatibleInstanceTypes", Type: corev1.EventTypeWarning,
				Note: []string{"NodePool requirements filtered out all compatible available instance types"}},
		},
		{
			Name: "nodepool-hash-forged",
			Object: func(string) client.Object {
				return nodePool("forged-hash").Annotations(map[string]string{karpv1.NodePoolHashAnnotationKey: "forged"}).Obj()
			},
			Annotation: &Annotation{Key: karpv1.NodePoolHashAnnotationKey, Malformed: "forged"},
		},
		{
			Name: "nodepool-hash-version-forged",
			Object: func(string) client.Object {
				return nodePool("forged-hash-version").Annotations(map[string]string{karpv1.NodePoolHashVersionAnnotationKey: "v0"}).Obj()
			},
			Annotation: &Annotation{Key: karpv1.NodePoolHashVersionAnnotationKey, Malformed: "v0"},
		},
	}
}

func rejectNodePool(name, field, message string, build func(*test.NodePoolWrapper), raw func(map[string]interface{})) Case {
	return Case{
		Name: name,
		Object: func(string) client.Object {
			w := nodePool(name)
			if build != nil {
				build(w)
			}
			return edit(w.Obj(), raw)
		},
		Rejection: &Rejection{Field: field, Message: message},
	}
}

func rejectPod(name, field, message string, req corev1.NodeSelectorRequirement) Case {
	return Case{
		Name:      name,
		Object:    func(ns string) client.Object { return pod(ns, name).NodeAffinityTerm(req).Obj() },
		Rejection: &Rejection{Field: field, Message: message},
	}
}

func failedScheduling(note ...string) *Event {
	return &Event{Reason: "FailedScheduling", Type: corev1.EventTypeWarning, Note: append([]string{"Failed to schedule pod, "}, note...)}
}

// nodePool is a valid NodePool of the cases' KWOKNodeClass, tainted with
// QuarantineTaint so that no pod but a case's would land on it.
func nodePool(name string) *test.NodePoolWrapper {
	return test.MakeNodePool(Prefix + name).NodeClassRef(kwokv1alpha1.NodeClassReference(NodeClassName)).Taint(QuarantineTaint)
}

// firstInMessages is the weight of the NodePools a case's pod selects:
// karp lists NodePools by weight in a pod's FailedScheduling note, which
// it truncates at 1,000 characters, so with many NodePools in the cluster
// the line the case looks for comes first. Weight changes nothing else
// here: no other pod tolerates these pools' taint.
const firstInMessages = 100

// quarantined tolerates QuarantineTaint.
var quarantined = corev1.Toleration{Key: QuarantineTaint.Key, Operator: corev1.TolerationOpExists}

// fixtures are the valid objects the cases share, created before them.
func fixtures() []client.Object { return []client.Object{test.MakeKWOKNodeClass(NodeClassName).Obj()} }

// pod is a pod of the cases, in the namespace, with no UID (the API
// server assigns it).
func pod(ns, name string) *test.PodWrapper {
	w := test.MakePod(Prefix+name).Namespace(ns).Label("app.kubernetes.io/part-of", "badinput")
	w.ObjectMeta.UID = ""
	w.Status = corev1.PodStatus{}
	return w
}

func ec2NodeClass(name string) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       "KarpenterNodeRole-badinput",
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "badinput"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "badinput"}}},
		},
	}
	nc.SetGroupVersionKind(awsv1.SchemeGroupVersion.WithKind(awsv1.Kind))
	return nc
}

// set returns an edit putting value at the path of an unstructured object.
func set(value interface{}, path ...string) func(map[string]interface{}) {
	return func(obj map[string]interface{}) {
		if err := unstructured.SetNestedField(obj, value, path...); err != nil {
			panic(err) // the cases' paths and values are fixed: a bug here is ours
		}
	}
}

// edit converts obj to unstructured and applies raw to it (nil: no edit),
// for values Go types cannot hold.
func edit(obj client.Object, raw func(map[string]interface{})) client.Object {
	u, err := toUnstructured(obj)
	if err != nil {
		panic(err) // the cases' objects have their kinds set: a bug here is ours
	}
	if raw != nil {
		raw(u.Object)
	}
	return u
}
