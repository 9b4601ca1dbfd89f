package kwok

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/catalog"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
)

// embeddedTypes loads the embedded catalog once for the package's tests.
var embeddedTypes = sync.OnceValues(func() ([]*cloudprovider.InstanceType, error) {
	return LoadInstanceTypes("", nil)
})

func mustEmbeddedTypes(t *testing.T) []*cloudprovider.InstanceType {
	t.Helper()
	types, err := embeddedTypes()
	if err != nil {
		t.Fatalf("loading the embedded catalog: %v", err)
	}
	return types
}

func typeNamed(t *testing.T, types []*cloudprovider.InstanceType, name string) *cloudprovider.InstanceType {
	t.Helper()
	for _, it := range types {
		if it.Name == name {
			return it
		}
	}
	t.Fatalf("no instance type %s", name)
	return nil
}

func TestEmbeddedCatalogLoadsEveryType(t *testing.T) {
	types := mustEmbeddedTypes(t)
	if len(types) != instancetypes.EC2Count {
		t.Fatalf("loaded %d instance types, want %d", len(types), instancetypes.EC2Count)
	}
	for _, it := range types {
		for _, key := range []string{corev1.LabelArchStable, corev1.LabelOSStable, kwokv1alpha1.InstanceFamilyLabelKey,
			kwokv1alpha1.InstanceSizeLabelKey, kwokv1alpha1.InstanceCPULabelKey, kwokv1alpha1.InstanceMemoryLabelKey} {
			if r := it.Requirements.Get(key); r == nil || len(r.Values()) != 1 {
				t.Errorf("%s does not define %s", it.Name, key)
			}
		}
		if len(it.Offerings) != 6 {
			t.Errorf("%s has %d offerings, want on-demand and spot in 3 zones", it.Name, len(it.Offerings))
		}
	}
}

func TestEmbeddedCatalogM5Large(t *testing.T) {
	it := typeNamed(t, mustEmbeddedTypes(t), "m5.large")
	want := map[string]string{
		corev1.LabelInstanceTypeStable:      "m5.large",
		corev1.LabelArchStable:              "amd64",
		corev1.LabelOSStable:                "linux",
		corev1.LabelTopologyRegion:          "us-east-1",
		"karpenter.k8s.aws/instance-family": "m5",
		kwokv1alpha1.InstanceFamilyLabelKey: "m5",
		kwokv1alpha1.InstanceSizeLabelKey:   "large",
		kwokv1alpha1.InstanceCPULabelKey:    "2",
		kwokv1alpha1.InstanceMemoryLabelKey: "8Gi",
	}
	labels := it.Requirements.Labels()
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, labels[k], v)
		}
	}
	if got := it.Allocatable.Cpu().MilliValue(); got != 1930 {
		t.Errorf("allocatable cpu = %dm, want 1930m", got)
	}
	var zones []string
	for _, o := range it.Offerings {
		switch o.CapacityType {
		case karpv1.CapacityTypeOnDemand:
			zones = append(zones, o.Zone)
			if o.Price != 0.096 {
				t.Errorf("on-demand price in %s = %v, want 0.096", o.Zone, o.Price)
			}
		case karpv1.CapacityTypeSpot:
			if want := catalog.SpotPrice("m5.large", o.Zone, 0.096, catalog.DefaultOptions()); o.Price != want || o.Price >= 0.096 {
				t.Errorf("spot price in %s = %v, want the model's %v below on-demand", o.Zone, o.Price, want)
			}
		}
	}
	if diff := cmp.Diff(DefaultZones, zones); diff != "" {
		t.Errorf("on-demand zones (-want,+got):\n%s", diff)
	}
}

func TestEmbeddedCatalogP38xlargeHasFourGPUs(t *testing.T) {
	it := typeNamed(t, mustEmbeddedTypes(t), "p3.8xlarge")
	gpu := it.Allocatable["nvidia.com/gpu"]
	if gpu.Value() != 4 {
		t.Errorf("nvidia.com/gpu allocatable = %s, want 4", gpu.String())
	}
	gpuCapacity := it.Capacity["nvidia.com/gpu"]
	if gpuCapacity.Value() != 4 {
		t.Errorf("nvidia.com/gpu capacity = %s, want 4", gpuCapacity.String())
	}
	labels := it.Requirements.Labels()
	if labels["karpenter.k8s.aws/instance-gpu-count"] != "4" || labels[kwokv1alpha1.InstanceSizeLabelKey] != "8xlarge" ||
		labels[kwokv1alpha1.InstanceMemoryLabelKey] != "244Gi" {
		t.Errorf("unexpected labels %v", labels)
	}
}

func TestCatalogFileAndZones(t *testing.T) {
	path := filepath.Join(t.TempDir(), "types.json")
	doc := `{"instanceTypes": [
	  {"name": "tiny-2x", "labels": {"kubernetes.io/arch": "arm64", "kubernetes.io/os": "linux"},
	   "capacity": {"cpu": "2", "memory": "3Gi", "pods": "10"}, "onDemandPricePerHour": 0.05}]}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	types, err := LoadInstanceTypes(path, []string{"zone-x"})
	if err != nil {
		t.Fatal(err)
	}
	if len(types) != 1 || len(types[0].Offerings) != 2 {
		t.Fatalf("got %d types with offerings %v", len(types), types[0].Offerings)
	}
	for _, o := range types[0].Offerings {
		if o.Zone != "zone-x" {
			t.Errorf("offering in %s, want zone-x", o.Zone)
		}
	}
	labels := types[0].Requirements.Labels()
	want := map[string]string{
		kwokv1alpha1.InstanceFamilyLabelKey: "tiny-2x",
		kwokv1alpha1.InstanceSizeLabelKey:   "2",
		kwokv1alpha1.InstanceCPULabelKey:    "2",
		kwokv1alpha1.InstanceMemoryLabelKey: "3Gi",
	}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, labels[k], v)
		}
	}
	if _, ok := labels[corev1.LabelTopologyRegion]; ok {
		t.Error("a catalog without a region got a region label")
	}
	if _, err := LoadInstanceTypes(filepath.Join(t.TempDir(), "missing.json"), nil); err == nil {
		t.Error("a missing catalog file loaded")
	}
}
