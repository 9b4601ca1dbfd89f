package environment_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/repo"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

func TestEnvironmentServesKarpAPIs(t *testing.T) {
	env := environment.New(t)
	ctx := t.Context()

	// Built-in types round-trip through the real API server.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "env-test"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}

	// The NodePool and NodeClaim CRDs are installed and serving.
	var pools karpv1.NodePoolList
	if err := env.Client.List(ctx, &pools); err != nil {
		t.Fatalf("listing NodePools: %v", err)
	}
	if len(pools.Items) != 0 {
		t.Fatalf("fresh environment has %d NodePools, want 0", len(pools.Items))
	}
	var claims karpv1.NodeClaimList
	if err := env.Client.List(ctx, &claims); err != nil {
		t.Fatalf("listing NodeClaims: %v", err)
	}

	// An object the CRD schema rejects comes back Invalid, which proves the
	// OpenAPI validation is live (not a schemaless store).
	bad := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "bad"}}
	bad.Spec.Weight = ptr(int32(1000))
	err := env.Client.Create(ctx, bad)
	t.Logf("rejected: %v", err)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("creating NodePool with weight 1000: got %v, want Invalid", err)
	}
	if !strings.Contains(err.Error(), "spec.weight") {
		t.Errorf("rejection %q does not name spec.weight", err)
	}
	if getErr := env.Client.Get(ctx, types.NamespacedName{Name: "bad"}, &karpv1.NodePool{}); !apierrors.IsNotFound(getErr) {
		t.Fatalf("rejected NodePool exists: %v", getErr)
	}
}

// Create makes the objects in the API server and deletes them when the
// (sub)test that asked for them ends.
func TestCreateDeletesWhenTheTestEnds(t *testing.T) {
	env := environment.New(t)
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "created", Namespace: "default"}}
	key := types.NamespacedName{Namespace: "default", Name: "created"}
	t.Run("creates", func(t *testing.T) {
		env.Create(t, cm)
		if err := env.Client.Get(ctx, key, &corev1.ConfigMap{}); err != nil {
			t.Fatalf("getting the created ConfigMap: %v", err)
		}
	})
	if err := env.Client.Get(ctx, key, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("getting the ConfigMap after its test ended: %v, want NotFound", err)
	}
}

func TestRepoRootFindsKarpModule(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	if got := environment.BinDir(root); got == "" {
		t.Fatal("empty bin dir")
	}
	t.Setenv("KARP_BIN_DIR", "/opt/karp-bin")
	if got, want := environment.BinDir(root), "/opt/karp-bin/k8s"; got != want {
		t.Errorf("BinDir with KARP_BIN_DIR = %q, want %q", got, want)
	}
}

func ptr[T any](v T) *T { return &v }

func TestStartRefusesTheUnitTier(t *testing.T) {
	t.Setenv(environment.TierEnv, "unit")
	env, err := environment.Start(t.Context())
	if err == nil {
		_ = env.Stop()
		t.Fatal("Start under the unit tier started an API server")
	}
	if !strings.Contains(err.Error(), "integration tier") {
		t.Errorf("error %q does not name the integration tier", err)
	}
}
