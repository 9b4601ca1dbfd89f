package v1_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// goldenClasses are classes that use only the fields karp offered before
// cpuOptions, connectionTracking and the open kubelet map; their hashes
// were recorded with that code, so adding fields (or changing how kubelet
// is stored) must leave them unchanged: a changed value would drift every
// node of an upgraded cluster.
func goldenClasses() map[string]*awsv1.EC2NodeClass {
	q := resource.MustParse("100Gi")
	full := hashNodeClass()
	full.Spec.UserData = ptr.To("#!/bin/bash\necho hi")
	full.Spec.DetailedMonitoring = ptr.To(true)
	full.Spec.AssociatePublicIPAddress = ptr.To(false)
	full.Spec.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0)
	full.Spec.Context = ptr.To("ctx")
	full.Spec.NetworkInterfaces = []*awsv1.NetworkInterface{ni(0, 0, awsv1.InterfaceTypeInterface), ni(1, 0, awsv1.InterfaceTypeEFAOnly)}
	full.Spec.BlockDeviceMappings = append(full.Spec.BlockDeviceMappings, &awsv1.BlockDeviceMapping{
		DeviceName: ptr.To("/dev/xvdc"), RootVolume: true,
		EBS: &awsv1.BlockDevice{VolumeSize: &q, VolumeType: ptr.To("io2"), IOPS: ptr.To[int64](3000), Encrypted: ptr.To(true), KMSKeyID: ptr.To("k")},
	})
	full.Spec.Kubelet = goldenKubelet()
	maxPods := hashNodeClass()
	maxPods.Spec.Kubelet = goldenMaxPods()
	emptyKubelet := hashNodeClass()
	emptyKubelet.Spec.Kubelet = goldenEmptyKubelet()
	return map[string]*awsv1.EC2NodeClass{
		"base":          hashNodeClass(),
		"minimal":       validNodeClass(),
		"full":          full,
		"kubelet":       maxPods,
		"empty kubelet": emptyKubelet,
	}
}

func TestHashGolden(t *testing.T) {
	// Recorded with karp's typed kubelet struct before cpuOptions,
	// connectionTracking and the open kubelet map were added.
	want := map[string]string{
		"base":          "16479196716528486313",
		"minimal":       "880604613684681243",
		"full":          "18266999646758486631",
		"kubelet":       "15137215123894614626",
		"empty kubelet": "6296394831714299430",
	}
	for name, nc := range goldenClasses() {
		if got := nc.Hash(); got != want[name] {
			t.Errorf("%s: hash %s, want %s", name, got, want[name])
		}
	}
}

func goldenKubelet() *awsv1.KubeletConfiguration {
	return &awsv1.KubeletConfiguration{
		ClusterDNS:                  []string{"10.0.0.10", "10.0.0.11"},
		MaxPods:                     ptr.To[int32](58),
		PodsPerCore:                 ptr.To[int32](4),
		SystemReserved:              map[string]string{"cpu": "100m", "memory": "100Mi"},
		KubeReserved:                map[string]string{"cpu": "200m", "ephemeral-storage": "1Gi"},
		EvictionHard:                map[string]string{"memory.available": "5%"},
		EvictionSoft:                map[string]string{"nodefs.available": "10%"},
		EvictionSoftGracePeriod:     map[string]metav1.Duration{"nodefs.available": {Duration: 90e9}},
		EvictionMaxPodGracePeriod:   ptr.To[int32](60),
		ImageGCHighThresholdPercent: ptr.To[int32](85),
		ImageGCLowThresholdPercent:  ptr.To[int32](80),
		CPUCFSQuota:                 ptr.To(false),
	}
}

func goldenMaxPods() *awsv1.KubeletConfiguration {
	return &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](110)}
}

func goldenEmptyKubelet() *awsv1.KubeletConfiguration { return &awsv1.KubeletConfiguration{} }
