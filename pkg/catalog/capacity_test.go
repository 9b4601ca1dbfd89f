package catalog

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestCapacityComesFromTheInstanceTypesOwnFigures: a catalog entry that
// gives only allocatable (as the EC2 catalog does) takes its cpu and memory
// capacity from its instance-cpu and instance-memory labels, the figures a
// real node of the type reports, not from allocatable; an explicit capacity
// wins; without either, capacity falls back to allocatable.
func TestCapacityComesFromTheInstanceTypesOwnFigures(t *testing.T) {
	const doc = `{"instanceTypes": [
 {"name": "aws.labels", "labels": {"karpenter.k8s.aws/instance-cpu": "2", "karpenter.k8s.aws/instance-memory": "8192"},
  "allocatable": {"cpu": "1930m", "memory": "7134Mi", "pods": "29", "ephemeral-storage": "17Gi"}, "onDemandPricePerHour": 0.1},
 {"name": "kwok.labels", "labels": {"karpenter.kwok.sh/instance-cpu": "4", "karpenter.kwok.sh/instance-memory": "16Gi"},
  "allocatable": {"cpu": "3920m", "memory": "15Gi", "pods": "58"}, "onDemandPricePerHour": 0.2},
 {"name": "explicit", "labels": {"karpenter.k8s.aws/instance-cpu": "2", "karpenter.k8s.aws/instance-memory": "8192"},
  "capacity": {"cpu": "3", "memory": "9Gi", "pods": "29"}, "allocatable": {"cpu": "1930m", "memory": "7134Mi", "pods": "29"}, "onDemandPricePerHour": 0.1},
 {"name": "bare", "allocatable": {"cpu": "1930m", "memory": "7134Mi", "pods": "29"}, "onDemandPricePerHour": 0.1}
]}`
	types, err := Parse([]byte(doc), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[corev1.ResourceName]string{
		"aws.labels":  {corev1.ResourceCPU: "2", corev1.ResourceMemory: "8Gi", corev1.ResourcePods: "29", corev1.ResourceEphemeralStorage: "17Gi"},
		"kwok.labels": {corev1.ResourceCPU: "4", corev1.ResourceMemory: "16Gi", corev1.ResourcePods: "58"},
		"explicit":    {corev1.ResourceCPU: "3", corev1.ResourceMemory: "9Gi", corev1.ResourcePods: "29"},
		"bare":        {corev1.ResourceCPU: "1930m", corev1.ResourceMemory: "7134Mi", corev1.ResourcePods: "29"},
	}
	for _, it := range types {
		for name, q := range want[it.Name] {
			if got := it.Capacity[name]; got.Cmp(resource.MustParse(q)) != 0 {
				t.Errorf("%s: capacity %s = %s, want %s", it.Name, name, got.String(), q)
			}
		}
		if got := it.Allocatable[corev1.ResourceCPU]; it.Name != "kwok.labels" && got.Cmp(resource.MustParse("1930m")) != 0 {
			t.Errorf("%s: allocatable cpu = %s, want the catalog's 1930m", it.Name, got.String())
		}
	}
}

// TestCapacityLabelsMustBeNumbers: a malformed instance-cpu or
// instance-memory label is an error naming the type, not a silent zero.
func TestCapacityLabelsMustBeNumbers(t *testing.T) {
	const doc = `{"instanceTypes": [{"name": "bad", "labels": {"karpenter.k8s.aws/instance-cpu": "two"},
  "allocatable": {"cpu": "1930m", "memory": "7134Mi"}, "onDemandPricePerHour": 0.1}]}`
	if _, err := Parse([]byte(doc), DefaultOptions()); err == nil {
		t.Error("parsed a type whose instance-cpu label is not a number")
	}
}
