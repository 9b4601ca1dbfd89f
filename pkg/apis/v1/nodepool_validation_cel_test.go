package v1_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

const (
	labelsPath = "spec.template.metadata.labels"
	reqsPath   = "spec.template.spec.requirements"
	taintsPath = "spec.template.spec.taints"
	budgets    = "spec.disruption.budgets"
)

func pool() *test.NodePoolWrapper { return test.MakeNodePool("invalid") }

func withLabel(key, value string) client.Object {
	return pool().Labels(map[string]string{key: value}).Obj()
}

func withReq(key string, op corev1.NodeSelectorOperator, values ...string) client.Object {
	return pool().Requirement(key, op, values...).Obj()
}

func withTaint(key, value string, effect corev1.TaintEffect) client.Object {
	return pool().Taint(corev1.Taint{Key: key, Value: value, Effect: effect}).Obj()
}

func manyRequirements(n int) client.Object {
	w := pool()
	for i := 0; i < n; i++ {
		w.Requirement(fmt.Sprintf("example.com/key-%d", i), corev1.NodeSelectorOpExists)
	}
	return w.Obj()
}

func manyLabels(n int) client.Object {
	labels := map[string]string{}
	for i := 0; i < n; i++ {
		labels[fmt.Sprintf("example.com/label-%d", i)] = "v"
	}
	return pool().Labels(labels).Obj()
}

func manyBudgets(n int) client.Object {
	bs := make([]karpv1.Budget, n)
	for i := range bs {
		bs[i] = karpv1.Budget{Nodes: "1"}
	}
	return pool().Budgets(bs...).Obj()
}

// invalidNodePools are NodePools the API server must reject, each with the
// field path and message the user sees.
func invalidNodePools() map[string]invalidCase {
	gt := corev1.NodeSelectorOpGt
	return map[string]invalidCase{
		// Template labels.
		"label karpenter.sh/nodepool":     {obj: withLabel("karpenter.sh/nodepool", "x"), want: []string{labelsPath, `label "karpenter.sh/nodepool" is restricted`}},
		"label kubernetes.io/hostname":    {obj: withLabel("kubernetes.io/hostname", "x"), want: []string{labelsPath, `label "kubernetes.io/hostname" is restricted`}},
		"label in karpenter.sh domain":    {obj: withLabel("karpenter.sh/team", "x"), want: []string{labelsPath, `label domain "karpenter.sh" is restricted`}},
		"label in karpenter.sh subdomain": {obj: withLabel("team.karpenter.sh/name", "x"), want: []string{labelsPath, `label domain "karpenter.sh" is restricted`}},
		"label key not qualified":         {obj: withLabel("bad key", "x"), want: []string{labelsPath, "label keys must be qualified names"}},
		"label value too long":            {obj: withLabel("team", strings.Repeat("a", 64)), want: []string{labelsPath + ".team", "may not be more than 63"}},
		"label value bad format":          {obj: withLabel("team", "-a"), want: []string{labelsPath + ".team", "should match"}},
		"more than 100 labels":            {obj: manyLabels(101), want: []string{labelsPath, "must have at most 100"}},

		// Requirements.
		"requirement karpenter.sh/nodepool":    {obj: withReq("karpenter.sh/nodepool", corev1.NodeSelectorOpIn, "a"), want: []string{reqsPath, `label "karpenter.sh/nodepool" is restricted`}},
		"requirement kubernetes.io/hostname":   {obj: withReq("kubernetes.io/hostname", corev1.NodeSelectorOpIn, "a"), want: []string{reqsPath + "[0].key", `label "kubernetes.io/hostname" is restricted`}},
		"requirement in karpenter.sh domain":   {obj: withReq("karpenter.sh/team", corev1.NodeSelectorOpExists), want: []string{reqsPath + "[0].key", `label domain "karpenter.sh" is restricted`}},
		"requirement key too long":             {obj: withReq("example.com/"+strings.Repeat("a", 310), corev1.NodeSelectorOpExists), want: []string{reqsPath + "[0].key", "may not be more than 316"}},
		"requirement key bad format":           {obj: withReq("bad key", corev1.NodeSelectorOpExists), want: []string{reqsPath + "[0].key", "should match"}},
		"requirement unknown operator":         {obj: withReq("example.com/a", "Between", "1"), want: []string{reqsPath + "[0].operator", "Unsupported value"}},
		"In without values":                    {obj: withReq("example.com/a", corev1.NodeSelectorOpIn), want: []string{reqsPath + "[0].values", "must have a value defined"}},
		"Gt with two values":                   {obj: withReq("example.com/a", gt, "1", "2"), want: []string{reqsPath + "[0].values", "must have a single non-negative integer value"}},
		"Lt with a non-integer":                {obj: withReq("example.com/a", corev1.NodeSelectorOpLt, "abc"), want: []string{reqsPath + "[0].values", "single non-negative integer"}},
		"Gte without values":                   {obj: withReq("example.com/a", karpv1.NodeSelectorOpGte), want: []string{reqsPath + "[0].values", "single non-negative integer"}},
		"Lte with a decimal":                   {obj: withReq("example.com/a", karpv1.NodeSelectorOpLte, "1.5"), want: []string{reqsPath + "[0].values", "single non-negative integer"}},
		"Gt with a negative integer":           {obj: withReq("example.com/a", gt, "-1"), want: []string{reqsPath + "[0].values[0]", "should match"}},
		"Exists with values":                   {obj: withReq("example.com/a", corev1.NodeSelectorOpExists, "a"), want: []string{reqsPath + "[0].values", "must not have values"}},
		"DoesNotExist with values":             {obj: withReq("example.com/a", corev1.NodeSelectorOpDoesNotExist, "a"), want: []string{reqsPath + "[0].values", "must not have values"}},
		"requirement value too long":           {obj: withReq("example.com/a", corev1.NodeSelectorOpIn, strings.Repeat("v", 64)), want: []string{reqsPath + "[0].values[0]", "may not be more than 63"}},
		"minValues zero":                       {obj: pool().RequirementWithMinValues("example.com/a", corev1.NodeSelectorOpIn, 0, "a").Obj(), want: []string{reqsPath + "[0].minValues", "should be greater than or equal to 1"}},
		"minValues above 50":                   {obj: pool().RequirementWithMinValues("example.com/a", corev1.NodeSelectorOpExists, 51).Obj(), want: []string{reqsPath + "[0].minValues", "should be less than or equal to 50"}},
		"minValues above the number of values": {obj: pool().RequirementWithMinValues("example.com/a", corev1.NodeSelectorOpIn, 3, "a", "b").Obj(), want: []string{reqsPath + "[0].minValues", "at least that many values"}},
		"more than 100 requirements":           {obj: manyRequirements(101), want: []string{reqsPath, "must have at most 100 items"}},
		"requirements missing":                 {obj: pool().Obj(), mutate: remove("spec", "template", "spec", "requirements"), want: []string{reqsPath, "Required value"}},

		// Taints.
		"taint effect unknown":         {obj: withTaint("example.com/a", "", "Sometimes"), want: []string{taintsPath + "[0].effect", "Unsupported value"}},
		"taint key bad format":         {obj: withTaint("bad key", "", corev1.TaintEffectNoSchedule), want: []string{taintsPath + "[0].key", "should match"}},
		"taint key empty":              {obj: withTaint("", "", corev1.TaintEffectNoSchedule), want: []string{taintsPath + "[0].key"}},
		"taint value bad format":       {obj: withTaint("example.com/a", "a b", corev1.TaintEffectNoSchedule), want: []string{taintsPath + "[0].value", "should match"}},
		"startup taint effect unknown": {obj: pool().StartupTaint(corev1.Taint{Key: "example.com/a", Effect: "Later"}).Obj(), want: []string{"spec.template.spec.startupTaints[0].effect", "Unsupported value"}},

		// Durations.
		"expireAfter in days":             {obj: pool().Obj(), mutate: set("30d", "spec", "template", "spec", "expireAfter"), want: []string{"spec.template.spec.expireAfter", "should match"}},
		"consolidateAfter not a duration": {obj: pool().Obj(), mutate: set("forever", "spec", "disruption", "consolidateAfter"), want: []string{"spec.disruption.consolidateAfter", "should match"}},
		"terminationGracePeriod in days":  {obj: pool().Obj(), mutate: set("2d", "spec", "template", "spec", "terminationGracePeriod"), want: []string{"spec.template.spec.terminationGracePeriod", "should match"}},
		"terminationGracePeriod Never":    {obj: pool().Obj(), mutate: set("Never", "spec", "template", "spec", "terminationGracePeriod"), want: []string{"spec.template.spec.terminationGracePeriod", "should match"}},

		// Disruption.
		"consolidationPolicy unknown":      {obj: pool().ConsolidationPolicy("Always").Obj(), want: []string{"spec.disruption.consolidationPolicy", "Unsupported value"}},
		"budget nodes above 100%":          {obj: pool().Budgets(karpv1.Budget{Nodes: "101%"}).Obj(), want: []string{budgets + "[0].nodes", "should match"}},
		"budget nodes negative":            {obj: pool().Budgets(karpv1.Budget{Nodes: "-1"}).Obj(), want: []string{budgets + "[0].nodes", "should match"}},
		"budget schedule without duration": {obj: pool().Budgets(karpv1.Budget{Nodes: "0", Schedule: ptr.To("@daily")}).Obj(), want: []string{budgets, "'schedule' must be set with 'duration'"}},
		"budget duration without schedule": {obj: pool().Budgets(karpv1.Budget{Nodes: "0", Duration: &metav1.Duration{Duration: time.Hour}}).Obj(), want: []string{budgets, "'schedule' must be set with 'duration'"}},
		"budget duration in seconds":       {obj: pool().Budgets(karpv1.Budget{Nodes: "0", Schedule: ptr.To("@daily"), Duration: &metav1.Duration{Duration: 90 * time.Second}}).Obj(), want: []string{budgets + "[0].duration", "should match"}},
		"budget schedule not cron":         {obj: pool().Budgets(karpv1.Budget{Nodes: "0", Schedule: ptr.To("daily"), Duration: &metav1.Duration{Duration: time.Hour}}).Obj(), want: []string{budgets + "[0].schedule", "should match"}},
		"budget reason unknown":            {obj: pool().Budgets(karpv1.Budget{Nodes: "0", Reasons: []karpv1.DisruptionReason{"Expired"}}).Obj(), want: []string{budgets + "[0].reasons[0]", "Unsupported value"}},
		"more than 50 budgets":             {obj: manyBudgets(51), want: []string{budgets, "must have at most 50 items"}},

		// Weight, limits, replicas.
		"weight zero":                {obj: pool().Weight(0).Obj(), want: []string{"spec.weight", "should be greater than or equal to 1"}},
		"weight above 100":           {obj: pool().Weight(101).Obj(), want: []string{"spec.weight", "should be less than or equal to 100"}},
		"limit not a quantity":       {obj: pool().Obj(), mutate: set("lots", "spec", "limits", "cpu"), want: []string{"spec.limits.cpu"}},
		"weight on a static pool":    {obj: pool().Replicas(2).Weight(10).Obj(), want: []string{"spec.weight", "'weight' cannot be set on static NodePools"}},
		"cpu limit on a static pool": {obj: pool().Replicas(2).Limits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}).Obj(), want: []string{"spec.limits", "only 'limits.nodes' is supported"}},
		"negative replicas":          {obj: pool().Replicas(-1).Obj(), want: []string{"spec.replicas", "should be greater than or equal to 0"}},

		// NodeClassRef.
		"nodeClassRef missing":            {obj: pool().NodeClassRef(nil).Obj(), want: []string{"spec.template.spec.nodeClassRef", "Required value"}},
		"nodeClassRef empty name":         {obj: pool().NodeClassRef(&karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass"}).Obj(), want: []string{"spec.template.spec.nodeClassRef.name", "name may not be empty"}},
		"nodeClassRef empty kind":         {obj: pool().NodeClassRef(&karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Name: "default"}).Obj(), want: []string{"spec.template.spec.nodeClassRef.kind", "kind may not be empty"}},
		"nodeClassRef group with a slash": {obj: pool().NodeClassRef(&karpv1.NodeClassReference{Group: "karpenter.kwok.sh/v1alpha1", Kind: "KWOKNodeClass", Name: "default"}).Obj(), want: []string{"spec.template.spec.nodeClassRef.group", "should match"}},
	}
}

func TestNodePoolValidationRejects(t *testing.T) {
	expectRejected(t, invalidNodePools())
}

// TestNodePoolValidationAccepts covers the edges next to the rejected cases.
func TestNodePoolValidationAccepts(t *testing.T) {
	never := karpv1.NillableDuration{}
	expectAccepted(t, map[string]client.Object{
		"Gte and Lte": pool().Requirement("example.com/generation", karpv1.NodeSelectorOpGte, "4").
			Requirement("example.com/cpu", karpv1.NodeSelectorOpLte, "0").Obj(),
		"Gt and Lt": pool().Requirement("karpenter.kwok.sh/instance-cpu", corev1.NodeSelectorOpGt, "1").
			Requirement("karpenter.kwok.sh/instance-cpu", corev1.NodeSelectorOpLt, "64").Obj(),
		"minValues equal to the number of values": pool().RequirementWithMinValues(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, 3, "a", "b", "c").Obj(),
		"minValues 50 on Exists":                  pool().RequirementWithMinValues("karpenter.kwok.sh/instance-family", corev1.NodeSelectorOpExists, 50).Obj(),
		"Never durations":                         pool().ExpireAfter(never).ConsolidateAfter(never).Obj(),
		"budgets with schedule and duration": pool().Budgets(
			karpv1.Budget{Nodes: "10%"},
			karpv1.Budget{Nodes: "0", Schedule: ptr.To("0 9 * * mon-fri"), Duration: &metav1.Duration{Duration: 8 * time.Hour}, Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted, karpv1.DisruptionReasonUnderutilized}},
			karpv1.Budget{Nodes: "100%", Schedule: ptr.To("@daily"), Duration: &metav1.Duration{Duration: 90 * time.Minute}},
			karpv1.Budget{Nodes: "5", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonEmpty}},
		).Obj(),
		"no budgets": pool().Budgets().Obj(),
		"allowed labels": pool().Labels(map[string]string{
			"karpenter.sh/capacity-type":          "spot",
			"node.kubernetes.io/role":             "worker",
			"node-restriction.kubernetes.io/team": "a",
			"kops.k8s.io/instancegroup":           "b",
			"topology.kubernetes.io/zone":         "test-zone-a",
			"team":                                "",
			"notkarpenter.sh/x":                   "y",
		}).Obj(),
		"allowed requirement keys": pool().Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot").
			Requirement("failure-domain.beta.kubernetes.io/zone", corev1.NodeSelectorOpIn, "a").
			Requirement("karpenter.k8s.aws/instance-category", corev1.NodeSelectorOpNotIn, "t").
			Requirement("node.kubernetes.io/windows-build", corev1.NodeSelectorOpDoesNotExist).Obj(),
		"taints of every effect": pool().
			Taint(corev1.Taint{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}).
			Taint(corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectPreferNoSchedule}).
			StartupTaint(corev1.Taint{Key: "example.com/agent", Value: "not-ready", Effect: corev1.TaintEffectNoExecute}).Obj(),
		"terminationGracePeriod":      pool().TerminationGracePeriod(48 * time.Hour).Obj(),
		"weight bounds":               pool().Weight(100).Obj(),
		"Balanced policy":             pool().ConsolidationPolicy(karpv1.ConsolidationPolicyBalanced).Obj(),
		"static pool with node limit": pool().Replicas(3).Limits(corev1.ResourceList{"nodes": resource.MustParse("5")}).Obj(),
		"limits on any resource": pool().Limits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"),
			corev1.ResourceMemory: resource.MustParse("1000Gi"), "nodes": resource.MustParse("10"), "nvidia.com/gpu": resource.MustParse("8")}).Obj(),
	})
}
