package migration

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
)

// upstreamCase is the NodePool template of the hash golden test case the
// pool uses, and the hash upstream's NodePool.Hash() computed for it
// (pkg/apis/v1/testdata, written by hack/upstreamhash).
func upstreamCase(t *testing.T, name string) (karpv1.NodeClaimTemplate, string, string) {
	t.Helper()
	dir := fixtures.Path(t, "pkg", "apis", "v1", "testdata")
	var cases []struct {
		Name     string                   `json:"name"`
		Template karpv1.NodeClaimTemplate `json:"template"`
	}
	var golden struct {
		Source      string            `json:"source"`
		HashVersion string            `json:"hashVersion"`
		Hashes      map[string]string `json:"hashes"`
	}
	for file, into := range map[string]any{"templates.yaml": &cases, "upstream-hashes.yaml": &golden} {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(raw, into); err != nil {
			t.Fatalf("parsing %s: %v", file, err)
		}
	}
	for _, c := range cases {
		if c.Name == name && golden.Hashes[name] != "" {
			return c.Template, golden.Hashes[name], golden.HashVersion
		}
	}
	t.Fatalf("no hash golden case %q", name)
	return karpv1.NodeClaimTemplate{}, "", ""
}

// instanceType returns the kwok catalog's type and its first on-demand
// offering.
func instanceType(t *testing.T, name string) cloudprovider.Launch {
	t.Helper()
	types, err := kwok.LoadInstanceTypes("", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == karpv1.CapacityTypeOnDemand {
				return cloudprovider.Launch{InstanceType: it, Offering: o}
			}
		}
	}
	t.Fatalf("no on-demand offering of %s in the kwok catalog", name)
	return cloudprovider.Launch{}
}

// upstreamNodeClaim returns a NodeClaim and its Node as upstream Karpenter
// leaves them once the node is initialized: the pool's labels and the
// launch's, the template hash annotations, the termination finalizer on
// both, a kwok providerID naming the Node, and the status conditions. The
// NodeClaim's status is returned separately: it is written through the
// status subresource after the create.
func upstreamNodeClaim(name string, pool *karpv1.NodePool, l cloudprovider.Launch, created time.Time) (*karpv1.NodeClaim, karpv1.NodeClaimStatus, *corev1.Node) {
	tmpl := pool.Spec.Template
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Labels:     map[string]string{karpv1.NodePoolLabelKey: pool.Name},
			Finalizers: []string{karpv1.TerminationFinalizer},
			Annotations: map[string]string{
				karpv1.NodePoolHashAnnotationKey:        pool.Annotations[karpv1.NodePoolHashAnnotationKey],
				karpv1.NodePoolHashVersionAnnotationKey: pool.Annotations[karpv1.NodePoolHashVersionAnnotationKey],
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodePool",
				Name: pool.Name, UID: pool.UID, BlockOwnerDeletion: ptrTo(true)}},
		},
		Spec: karpv1.NodeClaimSpec{
			Taints:       tmpl.Spec.Taints,
			NodeClassRef: tmpl.Spec.NodeClassRef,
			ExpireAfter:  tmpl.Spec.ExpireAfter,
			Requirements: append(append([]karpv1.NodeSelectorRequirementWithMinValues{},
				tmpl.Spec.Requirements...),
				karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{pool.Name}}),
			Resources: karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourcePods: *l.InstanceType.Capacity.Pods()}},
		},
	}
	for k, v := range tmpl.ObjectMeta.Labels {
		nc.Labels[k] = v
	}
	for k, v := range tmpl.ObjectMeta.Annotations {
		nc.Annotations[k] = v
	}
	nc.Labels = cloudprovider.LaunchLabels(nc, l)
	status := karpv1.NodeClaimStatus{
		ProviderID:  kwok.ProviderIDPrefix + name,
		NodeName:    name,
		ImageID:     kwok.ImageID,
		Capacity:    l.InstanceType.Capacity.DeepCopy(),
		Allocatable: l.InstanceType.Allocatable.DeepCopy(),
	}
	probe := &karpv1.NodeClaim{Status: status}
	for _, c := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
		probe.StatusConditions().SetTrue(c)
	}
	for i := range probe.Status.Conditions {
		probe.Status.Conditions[i].LastTransitionTime = metav1.NewTime(created)
	}

	nodeLabels := map[string]string{corev1.LabelHostname: name,
		karpv1.NodeRegisteredLabelKey: "true", karpv1.NodeInitializedLabelKey: "true"}
	for k, v := range nc.Labels {
		nodeLabels[k] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      nodeLabels,
			Annotations: map[string]string{localcluster.KWOKNodeAnnotationKey: localcluster.KWOKNodeAnnotationValue},
			Finalizers:  []string{karpv1.TerminationFinalizer},
		},
		Spec: corev1.NodeSpec{ProviderID: status.ProviderID, Taints: tmpl.Spec.Taints},
		Status: corev1.NodeStatus{
			Capacity:    l.InstanceType.Capacity.DeepCopy(),
			Allocatable: l.InstanceType.Allocatable.DeepCopy(),
			NodeInfo: corev1.NodeSystemInfo{Architecture: nodeLabels[corev1.LabelArchStable],
				OperatingSystem: nodeLabels[corev1.LabelOSStable]},
		},
	}
	for k, v := range tmpl.ObjectMeta.Annotations {
		node.Annotations[k] = v
	}
	return nc, probe.Status, node
}

func ptrTo[T any](v T) *T { return &v }
