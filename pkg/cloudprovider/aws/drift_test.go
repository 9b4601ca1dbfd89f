package aws_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

func TestNodeClassDrift(t *testing.T) {
	ctx := context.Background()
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	w := newWorld(t)
	nc := newNodeClaim("drift", nodeClass.Name)
	created, err := w.Provider.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	launched := nc.DeepCopy()
	launched.Annotations, launched.Labels, launched.Status = created.Annotations, created.Labels, created.Status
	if reason, err := w.Provider.IsDrifted(ctx, launched); err != nil || reason != "" {
		t.Fatalf("fresh NodeClaim: IsDrifted = %q, %v; want not drifted", reason, err)
	}
	// An older hash version is never compared.
	old := launched.DeepCopy()
	old.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = "v1"
	old.Annotations[awsv1.AnnotationEC2NodeClassHash] = "1"
	if reason, err := w.Provider.IsDrifted(ctx, old); err != nil || reason != "" {
		t.Errorf("other hash version: IsDrifted = %q, %v; want not drifted", reason, err)
	}
	// A spec change drifts the NodeClaim.
	nodeClass.Spec.Tags = map[string]string{"team": "data"}
	if err := env.Client.Update(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	if reason, err := w.Provider.IsDrifted(ctx, launched); err != nil || reason != cloudprovider.NodeClassDrift {
		t.Errorf("after a spec change: IsDrifted = %q, %v; want %s", reason, err, cloudprovider.NodeClassDrift)
	}
}

func TestGetHydratesFromTheInstance(t *testing.T) {
	ctx := context.Background()
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	w := newWorld(t)
	nc := newNodeClaim("get", nodeClass.Name)
	created, err := w.Provider.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.Restart(t).Get(ctx, created.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, "karpenter.sh/capacity-type",
		"karpenter.sh/nodepool", awsv1.LabelTopologyZoneID, awsv1.LabelInstanceFamily, corev1.LabelArchStable} {
		if got.Labels[key] == "" || got.Labels[key] != created.Labels[key] {
			t.Errorf("Get label %s = %q, Create said %q", key, got.Labels[key], created.Labels[key])
		}
	}
	if got.Name != nc.Name || got.Status.ImageID != created.Status.ImageID || got.CreationTimestamp.IsZero() {
		t.Errorf("Get = name %q image %q created %v; want %q, %q and the launch time", got.Name, got.Status.ImageID, got.CreationTimestamp, nc.Name, created.Status.ImageID)
	}
	if got.Status.Allocatable.Memory().Cmp(*created.Status.Allocatable.Memory()) != 0 {
		t.Errorf("Get allocatable memory %s, Create said %s", got.Status.Allocatable.Memory(), created.Status.Allocatable.Memory())
	}
	if _, err := w.Provider.Get(ctx, "aws:///us-west-2a/i-00000000000000bad"); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get of an unknown instance returned %v, want NodeClaimNotFound", err)
	}
	if _, err := w.Provider.Get(ctx, "kwok://node"); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get of a foreign providerID returned %v, want NodeClaimNotFound", err)
	}
}
