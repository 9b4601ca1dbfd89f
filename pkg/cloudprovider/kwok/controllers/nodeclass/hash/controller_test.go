package hash_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/controllers/nodeclass/hash"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

func stamped(hash, version string) map[string]string {
	return map[string]string{kwok.NodeClassHashAnnotationKey: hash, kwok.NodeClassHashVersionAnnotationKey: version}
}

func TestOlderHashVersionsAreRestampedNotDrifted(t *testing.T) {
	h.Reset(t)
	nodeClass := test.MakeKWOKNodeClass("default").Obj()
	nodeClass.Spec.NodeRegistrationDelay = &metav1.Duration{Duration: 3 * time.Second}
	h.Create(t, nodeClass)
	ref := kwokv1alpha1.NodeClassReference("default")
	old := test.MakeNodeClaim("old").NodeClassRef(ref).Annotations(stamped("111", "v1")).Obj()
	drifted := test.MakeNodeClaim("drifted").NodeClassRef(ref).Annotations(stamped("222", "v1")).Obj()
	current := test.MakeNodeClaim("current").NodeClassRef(ref).Annotations(stamped("333", kwok.NodeClassHashVersion)).Obj()
	unstamped := test.MakeNodeClaim("unstamped").NodeClassRef(ref).Obj()
	other := test.MakeNodeClaim("other-class").NodeClassRef(kwokv1alpha1.NodeClassReference("other")).Annotations(stamped("444", "v1")).Obj()
	h.Create(t, old, drifted, current, unstamped, other)
	drifted.StatusConditions().SetTrueWithReason(karpv1.ConditionTypeDrifted, "NodeClassDrifted", "")
	h.UpdateStatus(t, drifted)

	if _, err := operatortest.Reconcile(t, h, hash.NewController(h.Client), "default"); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"old":         stamped(kwok.NodeClassHash(nodeClass), kwok.NodeClassHashVersion),
		"drifted":     stamped("222", kwok.NodeClassHashVersion),
		"current":     stamped("333", kwok.NodeClassHashVersion),
		"unstamped":   nil,
		"other-class": stamped("444", "v1"),
	}
	for name, wantAnn := range want {
		got := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		h.Get(t, got)
		for _, k := range []string{kwok.NodeClassHashAnnotationKey, kwok.NodeClassHashVersionAnnotationKey} {
			if got.Annotations[k] != wantAnn[k] {
				t.Errorf("%s: %s = %q, want %q", name, k, got.Annotations[k], wantAnn[k])
			}
		}
	}
}
