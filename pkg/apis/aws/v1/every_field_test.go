package v1_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// everyField is an EC2NodeClass setting every field of upstream's v1.14
// schema, the v1.14 additions included.
func everyField(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile("testdata/ec2nodeclass-every-field.yaml")
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// A v1.14 EC2NodeClass using every field is accepted by the API server
// with nothing pruned, decodes strictly into karp's types, encodes back
// to the same spec, and passes karp's kubelet validation with the
// NodeClassCEL gate on.
func TestEveryV114FieldApplies(t *testing.T) {
	ctx := t.Context()
	u := everyField(t)
	sent, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := kubeClient.Create(ctx, u); err != nil {
		t.Fatalf("rejected: %v", err)
	}
	t.Cleanup(func() { _ = kubeClient.Delete(context.WithoutCancel(t.Context()), u) })
	stored, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var sentSpec, storedSpec map[string]interface{}
	mustSpec(t, sent, &sentSpec)
	mustSpec(t, stored, &storedSpec)
	for _, missing := range notIn(sentSpec, storedSpec, "spec") {
		t.Errorf("%s was pruned or changed", missing)
	}

	nc := &awsv1.EC2NodeClass{}
	if err := yaml.UnmarshalStrict(stored, nc); err != nil {
		t.Fatalf("decoding into the Go types: %v", err)
	}
	if nc.Spec.Kubelet == nil || nc.Spec.Kubelet.MaxPodsExpression == nil || nc.Spec.CPUOptions == nil || nc.Spec.ConnectionTracking == nil {
		t.Fatalf("v1.14 fields missing after decoding: %+v", nc.Spec)
	}
	if diff := cmp.Diff([]string{"allowedUnsafeSysctls", "cpuManagerPolicy", "featureGates", "registryPullQPS", "topologyManagerPolicy"}, nc.Spec.Kubelet.UnmanagedFields()); diff != "" {
		t.Errorf("passthrough kubelet fields (-want,+got):\n%s", diff)
	}
	reencoded, err := json.Marshal(nc)
	if err != nil {
		t.Fatal(err)
	}
	var reencodedSpec map[string]interface{}
	mustSpec(t, reencoded, &reencodedSpec)
	if diff := cmp.Diff(storedSpec, reencodedSpec); diff != "" {
		t.Errorf("spec after a Go round trip (-stored,+re-encoded):\n%s", diff)
	}
	if reason, errs := nc.ValidateKubelet(true); reason != "" {
		t.Errorf("ValidateKubelet: %s %v", reason, errs)
	}
}
