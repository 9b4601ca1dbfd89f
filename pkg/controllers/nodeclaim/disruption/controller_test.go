package disruption_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

func setup(t *testing.T) (*fake.CloudProvider, *disruption.Controller) {
	t.Helper()
	h.Reset(t)
	cp := fake.New(fake.DefaultInstanceTypes()...)
	return cp, disruption.NewController(h.Client, cp, h.Clock)
}

// hashed annotates with a template hash of the current version.
func hashed(hash string) map[string]string {
	return map[string]string{
		karpv1.NodePoolHashAnnotationKey:        hash,
		karpv1.NodePoolHashVersionAnnotationKey: karpv1.NodePoolHashVersion,
	}
}

// pool is NodePool "p", whose template launchedClaim's hash is of; the
// NodePool carries no hash annotation (drift does not read it).
func pool() *test.NodePoolWrapper { return test.MakeNodePool("p") }

// changedPool is pool with a template label added: its template hash
// differs from launchedClaim's.
func changedPool() *test.NodePoolWrapper {
	return pool().Labels(map[string]string{"example.com/changed": "yes"})
}

// launchedClaim is a launched, initialized default-instance-type NodeClaim
// of pool "p" in test-zone-1, on-demand.
func launchedClaim(name string) *test.NodeClaimWrapper {
	now := h.Clock.Now()
	return test.MakeNodeClaim(name).NodePool("p").
		Labels(map[string]string{
			karpv1.NodePoolLabelKey:        "p",
			corev1.LabelInstanceTypeStable: "default-instance-type",
			corev1.LabelTopologyZone:       "test-zone-1",
			karpv1.CapacityTypeLabelKey:    karpv1.CapacityTypeOnDemand,
		}).
		Annotations(hashed(pool().Obj().Hash())).
		ProviderID("fake:///"+name).
		Condition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", now).
		Condition(karpv1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", now).
		Condition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", now)
}

// create stores the NodeClaim including its status.
func create(t *testing.T, nc *karpv1.NodeClaim) {
	t.Helper()
	status := nc.Status
	h.Create(t, nc)
	nc.Status = status
	h.UpdateStatus(t, nc)
}

func reconcileClaim(t *testing.T, c *disruption.Controller, name string) (time.Duration, *karpv1.NodeClaim) {
	t.Helper()
	res, err := operatortest.Reconcile(t, h, c, name)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	got := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	h.Get(t, got)
	return res.RequeueAfter, got
}

func driftReason(nc *karpv1.NodeClaim) string {
	cond := nc.StatusConditions().Get(karpv1.ConditionTypeDrifted)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return ""
	}
	return cond.Reason
}

func TestDriftReasons(t *testing.T) {
	tests := map[string]struct {
		pool   *karpv1.NodePool
		claim  *karpv1.NodeClaim
		driftd func(cp *fake.CloudProvider)
		want   string
	}{
		"same hash and compatible labels": {
			pool:  pool().Obj(),
			claim: launchedClaim("c").Obj(),
			want:  "",
		},
		"template hash changed": {
			pool:  changedPool().Obj(),
			claim: launchedClaim("c").Obj(),
			want:  string(disruption.ReasonNodePoolDrifted),
		},
		// The pool's annotation lags a template change: drift reads the
		// template, not the annotation, either way.
		"template changed, the pool's annotation not yet": {
			pool:  withAnnotations(changedPool().Obj(), hashed(pool().Obj().Hash())),
			claim: launchedClaim("c").Obj(),
			want:  string(disruption.ReasonNodePoolDrifted),
		},
		"template unchanged, the pool's annotation stale": {
			pool:  withAnnotations(pool().Obj(), hashed("12345")),
			claim: launchedClaim("c").Obj(),
			want:  "",
		},
		"a claim hash of another version is not drift": {
			pool: changedPool().Obj(),
			claim: launchedClaim("c").Annotations(map[string]string{
				karpv1.NodePoolHashAnnotationKey: "12345", karpv1.NodePoolHashVersionAnnotationKey: "v0",
			}).Obj(),
			want: "",
		},
		"a claim without a hash is not drift": {
			pool:  changedPool().Obj(),
			claim: launchedClaim("c").Annotations(nil).Obj(),
			want:  "",
		},
		"requirements exclude the node's zone": {
			pool: pool().
				Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "test-zone-2").Obj(),
			claim: launchedClaim("c").Obj(),
			want:  string(disruption.ReasonRequirementsDrifted),
		},
		"requirements still include the node's zone": {
			pool: pool().
				Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "test-zone-1", "test-zone-2").Obj(),
			claim: launchedClaim("c").Obj(),
			want:  "",
		},
		"instance type gone": {
			pool:  pool().Obj(),
			claim: launchedClaim("c").Label(corev1.LabelInstanceTypeStable, "retired-type").Obj(),
			want:  string(disruption.ReasonInstanceTypeNotFound),
		},
		"no offering in the node's capacity type and zone": {
			pool: pool().Obj(),
			// Default fake types have spot only in zones 1 and 2.
			claim: launchedClaim("c").Label(corev1.LabelTopologyZone, "test-zone-3").
				Label(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeSpot).Obj(),
			want: string(disruption.ReasonInstanceTypeNotFound),
		},
		"provider reports NodeClass drift": {
			pool:   pool().Obj(),
			claim:  launchedClaim("c").Obj(),
			driftd: func(cp *fake.CloudProvider) { cp.SetDrifted("fake:///c", cloudprovider.NodeClassDrift) },
			want:   string(cloudprovider.NodeClassDrift),
		},
		"not launched never drifts": {
			pool: changedPool().Obj(),
			claim: test.MakeNodeClaim("c").NodePool("p").Annotations(hashed("h1")).
				Condition(karpv1.ConditionTypeLaunched, metav1.ConditionUnknown, "Launching", h.Clock.Now()).Obj(),
			want: "",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cp, c := setup(t)
			if tc.driftd != nil {
				tc.driftd(cp)
			}
			h.Create(t, tc.pool)
			create(t, tc.claim)
			requeue, got := reconcileClaim(t, c, tc.claim.Name)
			if r := driftReason(got); r != tc.want {
				t.Errorf("Drifted reason = %q, want %q (conditions %+v)", r, tc.want, got.Status.Conditions)
			}
			if tc.want != "" && requeue != disruption.DriftRecheckInterval {
				t.Errorf("RequeueAfter = %s, want %s", requeue, disruption.DriftRecheckInterval)
			}
		})
	}
}

func TestDriftClearsWhenTheNodeMatchesAgain(t *testing.T) {
	_, c := setup(t)
	nodePool := changedPool().Obj()
	h.Create(t, nodePool)
	create(t, launchedClaim("c").Obj())
	if _, got := reconcileClaim(t, c, "c"); driftReason(got) != string(disruption.ReasonNodePoolDrifted) {
		t.Fatalf("not drifted: %+v", got.Status.Conditions)
	}
	// The template is changed back.
	h.Get(t, nodePool)
	nodePool.Spec.Template.ObjectMeta.Labels = pool().Obj().Spec.Template.ObjectMeta.Labels
	if err := h.Env.Client.Update(t.Context(), nodePool); err != nil {
		t.Fatal(err)
	}
	_, got := reconcileClaim(t, c, "c")
	if got.StatusConditions().Get(karpv1.ConditionTypeDrifted) != nil {
		t.Errorf("Drifted not cleared: %+v", got.StatusConditions().Get(karpv1.ConditionTypeDrifted))
	}
}

// withAnnotations sets the NodePool's own annotations.
func withAnnotations(nodePool *karpv1.NodePool, annotations map[string]string) *karpv1.NodePool {
	nodePool.Annotations = annotations
	return nodePool
}

func consolidatable(nc *karpv1.NodeClaim) bool {
	return nc.StatusConditions().IsTrue(karpv1.ConditionTypeConsolidatable)
}

func TestConsolidatableAfterConsolidateAfterSinceInitialization(t *testing.T) {
	_, c := setup(t)
	h.Create(t, pool().ConsolidateAfter(karpv1.NewNillableDuration(30*time.Second)).Obj())
	create(t, launchedClaim("c").Obj())

	requeue, got := reconcileClaim(t, c, "c")
	if consolidatable(got) {
		t.Fatal("consolidatable right after initialization")
	}
	if requeue != 30*time.Second {
		t.Errorf("RequeueAfter = %s, want exactly the 30s left", requeue)
	}
	h.Clock.Step(29 * time.Second)
	if requeue, got = reconcileClaim(t, c, "c"); consolidatable(got) || requeue != time.Second {
		t.Fatalf("at 29s: consolidatable=%v requeue=%s, want false and 1s", consolidatable(got), requeue)
	}
	h.Clock.Step(time.Second)
	if _, got = reconcileClaim(t, c, "c"); !consolidatable(got) {
		t.Fatalf("not consolidatable once consolidateAfter elapsed: %+v", got.Status.Conditions)
	}

	// A pod event restarts the wait.
	got.Status.LastPodEventTime = metav1.NewTime(h.Clock.Now())
	h.UpdateStatus(t, got)
	requeue, got = reconcileClaim(t, c, "c")
	if consolidatable(got) || requeue != 30*time.Second {
		t.Fatalf("after a pod event: consolidatable=%v requeue=%s, want false and 30s", consolidatable(got), requeue)
	}
	h.Clock.Step(30 * time.Second)
	if _, got = reconcileClaim(t, c, "c"); !consolidatable(got) {
		t.Fatal("not consolidatable 30s after the pod event")
	}
}

func TestNotConsolidatable(t *testing.T) {
	tests := map[string]struct {
		pool  *karpv1.NodePool
		claim *karpv1.NodeClaim
	}{
		"consolidateAfter Never": {
			pool:  pool().ConsolidateAfter(karpv1.NillableDuration{}).Obj(),
			claim: launchedClaim("c").Obj(),
		},
		"not initialized": {
			pool: pool().Obj(),
			claim: launchedClaim("c").
				Condition(karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, "NodeNotReady", h.Clock.Now()).Obj(),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, c := setup(t)
			h.Create(t, tc.pool)
			// Start from a stale True condition the controller must clear.
			claim := tc.claim.DeepCopy()
			claim.StatusConditions().SetTrue(karpv1.ConditionTypeConsolidatable)
			create(t, claim)
			h.Clock.Step(time.Hour)
			if _, got := reconcileClaim(t, c, "c"); got.StatusConditions().Get(karpv1.ConditionTypeConsolidatable) != nil {
				t.Errorf("Consolidatable = %+v, want absent", got.StatusConditions().Get(karpv1.ConditionTypeConsolidatable))
			}
		})
	}
}
