package instancetype_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype"
)

func ptr[T any](v T) *T { return &v }

func find(t *testing.T, types []*cloudprovider.InstanceType, name string) *cloudprovider.InstanceType {
	t.Helper()
	for _, it := range types {
		if it.Name == name {
			return it
		}
	}
	t.Fatalf("%s not listed", name)
	return nil
}

// TestCapacityAndAllocatable pins the sizing formulas on m5.large (2 vCPU,
// 8 GiB, 3 ENIs × 10 IPv4) and a few other shapes, under class settings.
func TestCapacityAndAllocatable(t *testing.T) {
	type want struct {
		capacity, allocatable map[corev1.ResourceName]string
	}
	for name, tc := range map[string]struct {
		instanceType string
		opts         *instancetype.Options
		mutate       func(*awsv1.EC2NodeClass)
		want         want
	}{
		"AL2023 defaults (upstream's worked example)": {
			instanceType: "m5.large",
			want: want{
				capacity:    map[corev1.ResourceName]string{"cpu": "2", "memory": "7577Mi", "pods": "29", "ephemeral-storage": "20Gi"},
				allocatable: map[corev1.ResourceName]string{"cpu": "1930m", "memory": "6903Mi", "pods": "29", "ephemeral-storage": "17Gi"},
			},
		},
		"no VM overhead": {
			instanceType: "m5.large",
			opts:         &instancetype.Options{Region: "us-west-2"},
			want: want{
				capacity:    map[corev1.ResourceName]string{"memory": "8Gi"},
				allocatable: map[corev1.ResourceName]string{"memory": "7518Mi"},
			},
		},
		"reserved ENIs lower max pods but not kube-reserved memory": {
			instanceType: "m5.large",
			opts:         &instancetype.Options{Region: "us-west-2", VMMemoryOverheadPercent: 0.075, ReservedENIs: 1},
			want: want{
				capacity:    map[corev1.ResourceName]string{"pods": "20"},
				allocatable: map[corev1.ResourceName]string{"memory": "6903Mi"},
			},
		},
		"reserving every ENI leaves no pods": {
			instanceType: "m5.large",
			opts:         &instancetype.Options{Region: "us-west-2", VMMemoryOverheadPercent: 0.075, ReservedENIs: 3},
			want:         want{capacity: map[corev1.ResourceName]string{"pods": "0"}},
		},
		"maxPods": {
			instanceType: "m5.large",
			mutate:       func(nc *awsv1.EC2NodeClass) { nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr(int32(110))} },
			want: want{
				capacity:    map[corev1.ResourceName]string{"pods": "110"},
				allocatable: map[corev1.ResourceName]string{"memory": "6903Mi"},
			},
		},
		"podsPerCore caps pods": {
			instanceType: "m5.large",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.Kubelet = &awsv1.KubeletConfiguration{PodsPerCore: ptr(int32(4))}
			},
			want: want{capacity: map[corev1.ResourceName]string{"pods": "8"}},
		},
		"kubeReserved and systemReserved": {
			instanceType: "m5.large",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.Kubelet = &awsv1.KubeletConfiguration{
					KubeReserved:   map[string]string{"cpu": "200m", "memory": "1Gi", "pid": "100"},
					SystemReserved: map[string]string{"cpu": "100m", "ephemeral-storage": "2Gi"},
				}
			},
			want: want{allocatable: map[corev1.ResourceName]string{"cpu": "1700m", "memory": "6453Mi", "ephemeral-storage": "15Gi"}},
		},
		"evictionHard as percentage and quantity": {
			instanceType: "m5.large",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.Kubelet = &awsv1.KubeletConfiguration{
					EvictionHard: map[string]string{"memory.available": "500Mi", "nodefs.available": "20%"},
					EvictionSoft: map[string]string{"memory.available": "2Gi"},
				}
			},
			// Soft thresholds do not reduce allocatable.
			want: want{allocatable: map[corev1.ResourceName]string{"memory": "6503Mi", "ephemeral-storage": "15Gi"}},
		},
		"root volume sets ephemeral storage": {
			instanceType: "m5.large",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{
					{DeviceName: ptr("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: ptr(resource.MustParse("30Gi"))}},
					{DeviceName: ptr("/dev/xvdb"), EBS: &awsv1.BlockDevice{VolumeSize: ptr(resource.MustParse("100Gi"))}, RootVolume: true},
				}
			},
			want: want{capacity: map[corev1.ResourceName]string{"ephemeral-storage": "100Gi"}, allocatable: map[corev1.ResourceName]string{"ephemeral-storage": "89Gi"}},
		},
		"family ephemeral device among the volumes": {
			instanceType: "m5.large",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{
					{DeviceName: ptr("/dev/xvdz"), EBS: &awsv1.BlockDevice{VolumeSize: ptr(resource.MustParse("500Gi"))}},
					{DeviceName: ptr("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: ptr(resource.MustParse("50Gi"))}},
				}
			},
			want: want{capacity: map[corev1.ResourceName]string{"ephemeral-storage": "50Gi"}},
		},
		"RAID0 instance store": {
			instanceType: "m5d.large",
			mutate:       func(nc *awsv1.EC2NodeClass) { nc.Spec.InstanceStorePolicy = ptr(awsv1.InstanceStorePolicyRAID0) },
			want:         want{capacity: map[corev1.ResourceName]string{"ephemeral-storage": "75G"}},
		},
		"Bottlerocket: data volume, kube-reserved from max pods, no podsPerCore": {
			instanceType: "m5.large",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
				nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr(int32(110)), PodsPerCore: ptr(int32(4))}
			},
			want: want{
				capacity:    map[corev1.ResourceName]string{"pods": "110", "ephemeral-storage": "20Gi"},
				allocatable: map[corev1.ResourceName]string{"memory": "6012Mi"}, // 7577 − (11×110+255) − 100
			},
		},
		"Windows: 110 pods, private IPv4 addresses": {
			instanceType: "m5.large",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}}
			},
			want: want{capacity: map[corev1.ResourceName]string{"pods": "110", "ephemeral-storage": "50Gi", "vpc.amazonaws.com/PrivateIPv4Address": "9"}},
		},
		"Graviton: CMA before the VM overhead": {
			instanceType: "m6g.large",
			want:         want{capacity: map[corev1.ResourceName]string{"memory": "7518Mi"}}, // 8192 − 64 − ceil(8128 × 0.075)
		},
		"GPUs, EFA and pod ENIs": {
			instanceType: "p4d.24xlarge",
			want: want{
				capacity:    map[corev1.ResourceName]string{"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4", "vpc.amazonaws.com/pod-eni": "62", "pods": "737"},
				allocatable: map[corev1.ResourceName]string{"cpu": "95690m"},
			},
		},
		"EFA-only interfaces replace the EFA count and take an ENI": {
			instanceType: "p4d.24xlarge",
			mutate: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.NetworkInterfaces = []*awsv1.NetworkInterface{
					{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
					{NetworkCardIndex: 0, DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly},
					{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
				}
			},
			want: want{capacity: map[corev1.ResourceName]string{"vpc.amazonaws.com/efa": "2", "pods": "688"}}, // 14 × 49 + 2
		},
		"Neuron devices and cores": {
			instanceType: "inf2.48xlarge",
			want:         want{capacity: map[corev1.ResourceName]string{"aws.amazon.com/neuron": "12", "aws.amazon.com/neuroncore": "24"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, tc.opts)
			nc := nodeClass()
			if tc.mutate != nil {
				tc.mutate(nc)
			}
			types, err := e.provider.List(t.Context(), nc)
			if err != nil {
				t.Fatal(err)
			}
			it := find(t, types, tc.instanceType)
			for what, pair := range map[string]struct {
				want map[corev1.ResourceName]string
				got  corev1.ResourceList
			}{"capacity": {tc.want.capacity, it.Capacity}, "allocatable": {tc.want.allocatable, it.Allocatable}} {
				for res, want := range pair.want {
					got, ok := pair.got[res]
					if !ok && want != "0" || ok && got.Cmp(resource.MustParse(want)) != 0 {
						t.Errorf("%s %s = %s, want %s", what, res, got.String(), want)
					}
				}
			}
		})
	}
}
