package launchtemplate_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// efaType is an amd64 type with efa EFA interfaces (its
// vpc.amazonaws.com/efa capacity, as the instance-type provider sets it).
func efaType(name string, efa int64) *cloudprovider.InstanceType {
	capacity := corev1.ResourceList{
		corev1.ResourcePods: *resource.NewQuantity(100, resource.DecimalSI),
		awsv1.ResourceEFA:   *resource.NewQuantity(efa, resource.DecimalSI),
	}
	return scheduling.NewInstanceType(name, map[string]string{corev1.LabelArchStable: "amd64"}, capacity, capacity, nil)
}

// eni is the part of a launch template interface the layout decides.
type eni struct {
	Card, Device  *int32
	Type          string
	Groups        []string
	PrefixCount   *int32
	PublicAddress *bool
}

func enis(data *ec2types.RequestLaunchTemplateData) []eni {
	var out []eni
	for _, ni := range data.NetworkInterfaces {
		out = append(out, eni{Card: ni.NetworkCardIndex, Device: ni.DeviceIndex, Type: aws.ToString(ni.InterfaceType),
			Groups: ni.Groups, PrefixCount: ni.Ipv4PrefixCount, PublicAddress: ni.AssociatePublicIpAddress})
	}
	return out
}

func TestEFAInterfaces(t *testing.T) {
	groups := []string{"sg-1", "sg-2"}
	efa := func(card, device int32) eni {
		return eni{Card: aws.Int32(card), Device: aws.Int32(device), Type: "efa", Groups: groups, PrefixCount: aws.Int32(2), PublicAddress: aws.Bool(true)}
	}
	plain := eni{Device: aws.Int32(0), Groups: groups, PrefixCount: aws.Int32(2), PublicAddress: aws.Bool(true)}
	for name, tc := range map[string]struct {
		requestsEFA bool
		types       []*cloudprovider.InstanceType
		layout      []*awsv1.NetworkInterface
		// want is each template's interfaces, in the order of the types.
		want [][]eni
	}{
		"pods request EFA: one EFA interface per card, card 0's first": {
			requestsEFA: true,
			types:       []*cloudprovider.InstanceType{efaType("p5.48xlarge", 4)},
			want:        [][]eni{{efa(0, 0), efa(1, 1), efa(2, 1), efa(3, 1)}},
		},
		"types with different EFA counts get templates of their own": {
			requestsEFA: true,
			types:       []*cloudprovider.InstanceType{efaType("p4d.24xlarge", 4), efaType("g6.48xlarge", 1), efaType("p5.48xlarge", 4)},
			want:        [][]eni{{efa(0, 0), efa(1, 1), efa(2, 1), efa(3, 1)}, {efa(0, 0)}},
		},
		"no EFA request: an EFA-capable type launches with a plain interface": {
			types: []*cloudprovider.InstanceType{efaType("p5.48xlarge", 4)},
			want:  [][]eni{{plain}},
		},
		"the class's own layout wins over the EFA request": {
			requestsEFA: true,
			types:       []*cloudprovider.InstanceType{efaType("p5.48xlarge", 4)},
			layout: []*awsv1.NetworkInterface{
				{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
				{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
			},
			want: [][]eni{{
				{Card: aws.Int32(0), Device: aws.Int32(0), Type: "interface", Groups: groups, PrefixCount: aws.Int32(2), PublicAddress: aws.Bool(true)},
				{Card: aws.Int32(1), Device: aws.Int32(0), Type: "efa-only", Groups: groups},
			}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			nc := nodeClass(func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AssociatePublicIPAddress = aws.Bool(true)
				nc.Spec.IPPrefixCount = aws.Int32(2)
				nc.Spec.NetworkInterfaces = tc.layout
			})
			req := request(nc, karpv1.CapacityTypeOnDemand, tc.types...)
			if tc.requestsEFA {
				req.NodeClaim.Spec.Resources.Requests = corev1.ResourceList{awsv1.ResourceEFA: resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("1")}
			}
			e := fake.NewEC2()
			p := launchtemplate.NewProvider(e, clocktesting.NewFakeClock(time.Now()), opts)
			lts, err := p.EnsureAll(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			var got [][]eni
			for _, lt := range lts {
				data, ok := e.LaunchTemplateData(lt.Name)
				if !ok {
					t.Fatalf("%s was not created", lt.Name)
				}
				got = append(got, enis(data))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("interfaces per template (-want,+got)\n%s", diff)
			}
		})
	}
}
