package chaos

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// namespace holds the whole workload.
const namespace = "chaos"

// The NodePools of the run, each with its own KWOKNodeClass of the same
// name.
const (
	// poolOnDemand is drifted mid-run (its template gains a label) and
	// holds the do-not-disrupt pods.
	poolOnDemand = "chaos-od"
	// poolSpot takes the interruptions.
	poolSpot = "chaos-spot"
	// poolLimited has a cpu limit a little above what its workload needs.
	poolLimited = "chaos-limited"
	// poolTainted carries a NoSchedule taint only its workload tolerates,
	// and gets the DaemonSet that no longer fits.
	poolTainted = "chaos-tainted"
	// poolExpiring's nodes expire a few minutes after launch; its workload
	// is scaled to zero once they have.
	poolExpiring = "chaos-expiring"
	// poolSplit launches one c6a type of three sizes, priced in proportion
	// to their size: its workload fills one 16-cpu node, and once scaled
	// down fits only an 8-cpu node plus a 4-cpu one, the one cheaper move
	// (a 1→2 replacement).
	poolSplit = "chaos-split"
)

// splitTypes are poolSplit's instance types: 4, 8 and 16 cpu at $0.153,
// $0.306 and $0.612 an hour (3.92, 7.91 and 15.89 cpu allocatable). Five
// 3-cpu pods fit only the 16-cpu type ($0.612 against $0.765 for
// 8+8+4); three fit no cheaper single node, but fit 8+4 ($0.459).
var splitTypes = []string{"c6a.xlarge", "c6a.2xlarge", "c6a.4xlarge"}

// The run's taint, label and limit.
const (
	dedicatedTaintKey = "chaos.karp.sh/dedicated"
	generationLabel   = "chaos.karp.sh/generation"
	limitedCPU        = "48"
)

// expireAfter is the expiring pool's: three minutes, 90 seconds in the
// short presubmit run, whose expiry phase then waits half as long.
func expireAfter() string {
	if short {
		return "90s"
	}
	return "3m"
}

// pools are the run's NodePools: spot and on-demand, a limited one, a
// tainted one and one whose nodes expire. Every pool consolidates
// (WhenEmptyOrUnderutilized after 10s) with a 20% budget (50% for the
// on-demand pool and 100% for the expiring one, so its drift and the
// emptied pool's removal fit the run, and for the split pool, whose one
// node must be free to go), on 2 to 16 cpu instance types.
func pools() []*karpv1.NodePool {
	base := func(name, capacityType string) *test.NodePoolWrapper {
		return test.MakeNodePool(name).
			Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, capacityType).
			Requirement(kwokv1alpha1.InstanceCPULabelKey, corev1.NodeSelectorOpIn, "2", "4", "8", "16").
			ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized).
			ConsolidateAfter(karpv1.MustParseNillableDuration("10s")).
			Budgets(karpv1.Budget{Nodes: "20%"})
	}
	return []*karpv1.NodePool{
		base(poolOnDemand, karpv1.CapacityTypeOnDemand).Labels(map[string]string{generationLabel: "1"}).
			Budgets(karpv1.Budget{Nodes: "50%"}).Obj(),
		base(poolSpot, karpv1.CapacityTypeSpot).Obj(),
		base(poolLimited, karpv1.CapacityTypeOnDemand).Limits(test.ResourceList("cpu", limitedCPU)).Obj(),
		base(poolTainted, karpv1.CapacityTypeOnDemand).
			Taint(corev1.Taint{Key: dedicatedTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}).Obj(),
		base(poolExpiring, karpv1.CapacityTypeOnDemand).ExpireAfter(karpv1.MustParseNillableDuration(expireAfter())).
			Budgets(karpv1.Budget{Nodes: "100%"}).Obj(),
		base(poolSplit, karpv1.CapacityTypeOnDemand).
			Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, splitTypes...).
			Budgets(karpv1.Budget{Nodes: "100%"}).Obj(),
	}
}

// app is one Deployment of the workload and its PodDisruptionBudget.
type app struct {
	name, pool, cpu string
	replicas        int32
	// scaledDown is the replica count after the scale-down phase.
	scaledDown int32
	// pdb is the budget's maxUnavailable ("" for none).
	pdb          string
	doNotDisrupt bool
}

// apps are the workload: 289 pods at full scale.
func apps() []app {
	return []app{
		{name: "web", pool: poolOnDemand, cpu: "250m", replicas: 100, scaledDown: 40, pdb: "10%"},
		{name: "pinned", pool: poolOnDemand, cpu: "250m", replicas: 10, scaledDown: 10, doNotDisrupt: true},
		{name: "batch", pool: poolSpot, cpu: "500m", replicas: 100, scaledDown: 50, pdb: "20%"},
		{name: "capped", pool: poolLimited, cpu: "1", replicas: 24, scaledDown: 24, pdb: "2"},
		{name: "edge", pool: poolTainted, cpu: "500m", replicas: 30, scaledDown: 30, pdb: "3"},
		{name: "ephemeral", pool: poolExpiring, cpu: "500m", replicas: 20, scaledDown: 20, pdb: "2"},
		{name: "split", pool: poolSplit, cpu: "3", replicas: 5, scaledDown: 3, pdb: "1"},
	}
}

// deployment is the app's Deployment: framework.Deployment with the
// toleration of the tainted pool and the do-not-disrupt annotation where
// the app asks for them.
func (a app) deployment() *appsv1.Deployment {
	d := framework.Deployment(a.name, namespace, a.pool, a.replicas, a.cpu)
	d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	if a.pool == poolTainted {
		d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: dedicatedTaintKey, Operator: corev1.TolerationOpExists}}
	}
	if a.doNotDisrupt {
		d.Spec.Template.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	}
	return d
}

// budget is the app's PodDisruptionBudget, nil when it has none.
func (a app) budget() *policyv1.PodDisruptionBudget {
	if a.pdb == "" {
		return nil
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: a.name, Namespace: namespace},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.Parse(a.pdb)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": a.name}},
		},
	}
}

// agent is the DaemonSet that no longer fits the tainted pool's full
// nodes: karp replaces them by nodes that fit it too.
func agent() *appsv1.DaemonSet {
	ds := test.MakeDaemonSet("agent").Namespace(namespace).Requests("cpu", "1500m", "memory", "128Mi").
		NodeSelector(map[string]string{karpv1.NodePoolLabelKey: poolTainted}).
		Toleration(corev1.Toleration{Key: dedicatedTaintKey, Operator: corev1.TolerationOpExists}).Obj()
	ds.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}
	return ds
}
