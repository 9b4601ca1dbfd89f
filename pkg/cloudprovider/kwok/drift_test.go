package kwok

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

func TestNodeClassDrift(t *testing.T) {
	c := newProvider(t)
	nodeClass := readyNodeClass(t, nil)
	nc := newNodeClaim("drift", nodeClass.Name)
	created, err := c.Create(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	// The lifecycle controller merges the returned annotations.
	stored := nc.DeepCopy()
	stored.Annotations = created.Annotations
	stored.Status = created.Status
	drifted := func() cloudprovider.DriftReason {
		t.Helper()
		reason, err := c.IsDrifted(t.Context(), stored)
		if err != nil {
			t.Fatalf("IsDrifted: %v", err)
		}
		return reason
	}
	if got := drifted(); got != "" {
		t.Fatalf("drifted right after launch: %s", got)
	}
	nodeClass.Spec.NodeRegistrationDelay = &metav1.Duration{Duration: 5 * time.Second}
	if err := env.Client.Update(t.Context(), nodeClass); err != nil {
		t.Fatal(err)
	}
	if got := drifted(); got != cloudprovider.NodeClassDrift {
		t.Errorf("after a KWOKNodeClass spec change IsDrifted = %q, want %q", got, cloudprovider.NodeClassDrift)
	}
	unhashed := stored.DeepCopy()
	unhashed.Annotations = nil
	if reason, _ := c.IsDrifted(t.Context(), unhashed); reason != "" {
		t.Errorf("a NodeClaim without a recorded hash drifted: %s", reason)
	}
	stored.Annotations[NodeClassHashVersionAnnotationKey] = "v0"
	if got := drifted(); got != "" {
		t.Errorf("a hash of another version was compared: %s", got)
	}
	stored.Annotations[NodeClassHashVersionAnnotationKey] = NodeClassHashVersion
	if err := env.Client.Delete(t.Context(), nodeClass); err != nil {
		t.Fatal(err)
	}
	if got := drifted(); got != "" {
		t.Errorf("with the KWOKNodeClass gone IsDrifted = %q, want no drift", got)
	}
}
