package install

import (
	"fmt"
	"net/http"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestChartProbes answers the chart's liveness and readiness probes and
// serves metrics where the chart's Service points.
func TestChartProbes(t *testing.T) {
	in := install(t)
	for _, url := range []string{
		fmt.Sprintf("http://127.0.0.1:%d/healthz", in.HealthPort),
		fmt.Sprintf("http://127.0.0.1:%d/readyz", in.HealthPort),
		fmt.Sprintf("http://127.0.0.1:%d/metrics", in.MetricsPort),
	} {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", url, resp.Status)
		}
	}
}

// TestServiceAccountIsNotBroaderThanNeeded asks the API server what the
// chart's ServiceAccount may do: what karp does is allowed, and Secrets,
// ConfigMaps, workloads and other Leases are not.
func TestServiceAccountIsNotBroaderThanNeeded(t *testing.T) {
	in := install(t)
	cs, err := kubernetes.NewForConfig(in.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		attrs authorizationv1.ResourceAttributes
		want  bool
	}{
		// What karp does.
		{authorizationv1.ResourceAttributes{Group: "karpenter.sh", Resource: "nodeclaims", Verb: "create"}, true},
		{authorizationv1.ResourceAttributes{Group: "karpenter.sh", Resource: "nodepools", Subresource: "status", Verb: "patch"}, true},
		{authorizationv1.ResourceAttributes{Resource: "nodes", Verb: "delete"}, true},
		{authorizationv1.ResourceAttributes{Resource: "pods", Subresource: "eviction", Verb: "create", Namespace: "default"}, true},
		{authorizationv1.ResourceAttributes{Group: "events.k8s.io", Resource: "events", Verb: "create", Namespace: "default"}, true},
		{authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Namespace: namespace, Name: "karpenter-leader-election"}, true},
		// What it does not.
		{authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "get", Namespace: "kube-system"}, false},
		{authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "list"}, false},
		{authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "get", Namespace: namespace}, false},
		{authorizationv1.ResourceAttributes{Resource: "configmaps", Verb: "get", Namespace: "kube-system"}, false},
		{authorizationv1.ResourceAttributes{Resource: "pods", Verb: "create", Namespace: "default"}, false},
		{authorizationv1.ResourceAttributes{Resource: "pods", Verb: "update", Namespace: "default"}, false},
		{authorizationv1.ResourceAttributes{Group: "apps", Resource: "deployments", Verb: "update", Namespace: "default"}, false},
		{authorizationv1.ResourceAttributes{Group: "karpenter.sh", Resource: "nodepools", Verb: "delete"}, false},
		{authorizationv1.ResourceAttributes{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "update"}, false},
		{authorizationv1.ResourceAttributes{Resource: "serviceaccounts", Subresource: "token", Verb: "create", Namespace: namespace, Name: serviceAccount}, false},
		{authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Namespace: "kube-system", Name: "kube-scheduler"}, false},
		{authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Namespace: namespace, Name: "another-lease"}, false},
	} {
		review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(), &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &tc.attrs},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed != tc.want {
			t.Errorf("%s %s/%s %s in %q: allowed=%t, want %t", tc.attrs.Verb, tc.attrs.Group, tc.attrs.Resource, tc.attrs.Subresource,
				tc.attrs.Namespace, review.Status.Allowed, tc.want)
		}
	}

	// And for real: reading a Secret or another Lease is Forbidden.
	if _, err := cs.CoreV1().Secrets("kube-system").List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets in kube-system: %v, want Forbidden", err)
	}
	if _, err := cs.CoreV1().Secrets(namespace).Get(t.Context(), "any", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("getting a Secret in %s: %v, want Forbidden", namespace, err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "not-karps", Namespace: "kube-system"}}
	if _, err := cs.CoordinationV1().Leases("kube-system").Create(t.Context(), lease, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("creating a Lease in kube-system: %v, want Forbidden", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing ConfigMaps: %v, want Forbidden", err)
	}
	// The controller's own Lease, which it holds through the Role.
	held, err := cs.CoordinationV1().Leases(namespace).Get(t.Context(), "karpenter-leader-election", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the ServiceAccount reading karp's Lease: %v", err)
	}
	if held.Spec.HolderIdentity == nil || *held.Spec.HolderIdentity == "" {
		t.Errorf("karp's Lease in %s has no holder", namespace)
	}
}
