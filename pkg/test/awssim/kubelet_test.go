package awssim

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/userdata"
	"github.com/karp-autoscaler/karp/pkg/test/awstest"
)

func newTestSim(t *testing.T) *Sim {
	t.Helper()
	s, err := New(t.Context(), Options{KubernetesVersion: "1.33", ClusterEndpoint: "https://127.0.0.1:6443", CABundle: "Y2E=",
		Clock: clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestNodeMatchesKarpsPrediction boots nodes from the user data karp
// renders and checks each registers with the labels, taints, capacity and
// allocatable karp's AWS instance types predicted for it: the kubelet
// computes them on its own (the EKS AMIs' formulas), so a difference is a
// real disagreement between karp's model and the node.
func TestNodeMatchesKarpsPrediction(t *testing.T) {
	sim := newTestSim(t)
	world := awstest.NewWorld(t, nil)
	nodeClass := awstest.NewNodeClass(nil)
	for i, z := range awstest.Zones {
		nodeClass.Status.Subnets = append(nodeClass.Status.Subnets, awsv1.Subnet{ID: "subnet-" + string(rune('a'+i)), Zone: z.Name, ZoneID: z.ID})
	}
	types, err := world.Types.List(t.Context(), nodeClass)
	if err != nil {
		t.Fatal(err)
	}
	predicted := map[string]corev1.ResourceList{}
	capacity := map[string]corev1.ResourceList{}
	for _, it := range types {
		predicted[it.Name], capacity[it.Name] = it.Allocatable, it.Capacity
	}
	taints := []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	labels := map[string]string{"billing-team": "my-team", karpv1.NodePoolLabelKey: "gpu", corev1.LabelInstanceTypeStable: "dropped"}
	for _, family := range []string{awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyAL2} {
		for _, name := range []string{"m5.large", "c5.xlarge", "p3.8xlarge", "m6g.large", "r5.2xlarge"} {
			t.Run(family+"/"+name, func(t *testing.T) {
				podsQty := capacity[name][corev1.ResourcePods]
				pods := int32(podsQty.Value())
				rendered, err := userdata.Render(family, userdata.Options{
					ClusterName: "karp-local", ClusterEndpoint: "https://127.0.0.1:6443", CABundle: "Y2E=", ClusterCIDR: "10.96.0.0/16",
					MaxPods: &pods, Labels: labels, Taints: taints,
				})
				if err != nil {
					t.Fatal(err)
				}
				boot, err := parseUserData(base64.StdEncoding.EncodeToString([]byte(rendered)))
				if err != nil {
					t.Fatalf("parsing %s user data: %v\n%s", family, err, rendered)
				}
				if family == awsv1.AMIFamilyBottlerocket {
					// Bottlerocket's data volume holds the kubelet's state.
					l := launch{info: sim.types[name]}
					size := capacity[name][corev1.ResourceEphemeralStorage]
					l.rootVolume = &size
					checkNode(t, l, boot, name, capacity[name], predicted[name])
					return
				}
				checkNode(t, launch{info: sim.types[name]}, boot, name, capacity[name], predicted[name])
			})
		}
	}
}

func checkNode(t *testing.T, l launch, boot bootConfig, name string, wantCapacity, wantAllocatable corev1.ResourceList) {
	t.Helper()
	l.region, l.k8sVersion = "us-west-2", "1.33"
	l.instance = ec2types.Instance{
		InstanceId: aws.String("i-00000000000000102"), InstanceType: ec2types.InstanceType(name),
		Placement: &ec2types.Placement{AvailabilityZone: aws.String("us-west-2b")}, ImageId: aws.String("ami-1"),
	}
	node := l.node(boot)
	if node.Name != "ip-10-0-1-2.us-west-2.compute.internal" || node.Spec.ProviderID != "aws:///us-west-2b/i-00000000000000102" {
		t.Errorf("node %s providerID %s", node.Name, node.Spec.ProviderID)
	}
	for k, want := range map[string]string{
		"billing-team": "my-team", karpv1.NodePoolLabelKey: "gpu", corev1.LabelInstanceTypeStable: name,
		corev1.LabelTopologyZone: "us-west-2b", corev1.LabelTopologyRegion: "us-west-2", corev1.LabelHostname: node.Name,
	} {
		if got := node.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	hasTaint := func(key string) bool {
		for _, taint := range node.Spec.Taints {
			if taint.Key == key {
				return true
			}
		}
		return false
	}
	if !hasTaint(karpv1.UnregisteredTaintKey) || !hasTaint("nvidia.com/gpu") {
		t.Errorf("taints %v, want the unregistered and nvidia.com/gpu taints", node.Spec.Taints)
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage, "nvidia.com/gpu"} {
		want, got := wantCapacity[res], node.Status.Capacity[res]
		if want.Cmp(got) != 0 {
			t.Errorf("capacity %s = %s, karp predicted %s", res, got.String(), want.String())
		}
		want, got = wantAllocatable[res], node.Status.Allocatable[res]
		if want.Cmp(got) != 0 {
			t.Errorf("allocatable %s = %s, karp predicted %s", res, got.String(), want.String())
		}
	}
}

// TestUnparsableUserDataNeverJoins checks user data no AMI understands is
// an error, not a node.
func TestUnparsableUserDataNeverJoins(t *testing.T) {
	for name, text := range map[string]string{
		"empty":             "",
		"shell, no kubelet": "#!/bin/bash\necho hello\n",
		"MIME, no config":   "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: text/x-shellscript\n\necho hi\n--//--\n",
	} {
		if _, err := parseUserData(base64.StdEncoding.EncodeToString([]byte(text))); err == nil {
			t.Errorf("%s: parsed, want an error", name)
		}
	}
	if _, err := parseUserData("not base64!"); err == nil {
		t.Error("non-base64 user data parsed")
	}
}
