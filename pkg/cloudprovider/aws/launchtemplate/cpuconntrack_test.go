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
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// templateData ensures the templates for the class and returns the first
// one's contents as EC2 stored them.
func templateData(t *testing.T, nc *awsv1.EC2NodeClass, requestsEFA bool, types ...*cloudprovider.InstanceType) *ec2types.RequestLaunchTemplateData {
	t.Helper()
	req := request(nc, karpv1.CapacityTypeOnDemand, types...)
	if requestsEFA {
		req.NodeClaim.Spec.Resources.Requests = corev1.ResourceList{awsv1.ResourceEFA: resource.MustParse("1")}
	}
	e := fake.NewEC2()
	p := launchtemplate.NewProvider(e, clocktesting.NewFakeClock(time.Now()), opts)
	lts, err := p.EnsureAll(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	data, ok := e.LaunchTemplateData(lts[0].Name)
	if !ok {
		t.Fatalf("%s was not created", lts[0].Name)
	}
	return data
}

// cpuOptions.nestedVirtualization is sent as written in the template's
// CpuOptions; without it the template has none.
func TestCPUOptions(t *testing.T) {
	for name, tc := range map[string]struct {
		options *awsv1.CPUOptions
		want    *ec2types.LaunchTemplateCpuOptionsRequest
	}{
		"unset":    {},
		"empty":    {options: &awsv1.CPUOptions{}},
		"enabled":  {options: &awsv1.CPUOptions{NestedVirtualization: aws.String("enabled")}, want: &ec2types.LaunchTemplateCpuOptionsRequest{NestedVirtualization: ec2types.NestedVirtualizationSpecificationEnabled}},
		"disabled": {options: &awsv1.CPUOptions{NestedVirtualization: aws.String("disabled")}, want: &ec2types.LaunchTemplateCpuOptionsRequest{NestedVirtualization: ec2types.NestedVirtualizationSpecificationDisabled}},
	} {
		t.Run(name, func(t *testing.T) {
			nc := nodeClass(func(nc *awsv1.EC2NodeClass) { nc.Spec.CPUOptions = tc.options })
			data := templateData(t, nc, false, instanceType("m8i.large", "amd64", 29))
			if diff := cmp.Diff(tc.want, data.CpuOptions, cmp.AllowUnexported(ec2types.LaunchTemplateCpuOptionsRequest{})); diff != "" {
				t.Errorf("CpuOptions (-want,+got):\n%s", diff)
			}
		})
	}
	// The setting is part of the template: changing it makes another one.
	enabled := templateData(t, nodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: aws.String("enabled")}
	}), false, instanceType("m8i.large", "amd64", 29))
	plain := templateData(t, nodeClass(nil), false, instanceType("m8i.large", "amd64", 29))
	if launchtemplate.Name(enabled, nil) == launchtemplate.Name(plain, nil) {
		t.Error("nested virtualization does not change the template name")
	}
}

// connectionTracking goes on every interface with addresses: the default
// one, each interface of an explicit layout and each EFA interface laid
// out for an EFA request; EFA-only devices get none.
func TestConnectionTracking(t *testing.T) {
	ct := &awsv1.ConnectionTracking{TCPEstablishedTimeout: aws.Int32(3600), UDPStreamTimeout: aws.Int32(120), UDPTimeout: aws.Int32(45)}
	spec := &ec2types.ConnectionTrackingSpecificationRequest{TcpEstablishedTimeout: aws.Int32(3600), UdpStreamTimeout: aws.Int32(120), UdpTimeout: aws.Int32(45)}
	udpOnly := &ec2types.ConnectionTrackingSpecificationRequest{UdpTimeout: aws.Int32(60)}
	layout := []*awsv1.NetworkInterface{
		{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
		{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
		{NetworkCardIndex: 2, DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeInterface},
	}
	for name, tc := range map[string]struct {
		ct          *awsv1.ConnectionTracking
		layout      []*awsv1.NetworkInterface
		requestsEFA bool
		types       []*cloudprovider.InstanceType
		want        []*ec2types.ConnectionTrackingSpecificationRequest
	}{
		"unset":                   {types: []*cloudprovider.InstanceType{instanceType("m7i.large", "amd64", 29)}, want: []*ec2types.ConnectionTrackingSpecificationRequest{nil}},
		"default interface":       {ct: ct, types: []*cloudprovider.InstanceType{instanceType("m7i.large", "amd64", 29)}, want: []*ec2types.ConnectionTrackingSpecificationRequest{spec}},
		"only the udp timeout":    {ct: &awsv1.ConnectionTracking{UDPTimeout: aws.Int32(60)}, types: []*cloudprovider.InstanceType{instanceType("m7i.large", "amd64", 29)}, want: []*ec2types.ConnectionTrackingSpecificationRequest{udpOnly}},
		"explicit layout":         {ct: ct, layout: layout, types: []*cloudprovider.InstanceType{instanceType("p5.48xlarge", "amd64", 100)}, want: []*ec2types.ConnectionTrackingSpecificationRequest{spec, nil, spec}},
		"efa interfaces laid out": {ct: ct, requestsEFA: true, types: []*cloudprovider.InstanceType{efaType("p5.48xlarge", 2)}, want: []*ec2types.ConnectionTrackingSpecificationRequest{spec, spec}},
	} {
		t.Run(name, func(t *testing.T) {
			nc := nodeClass(func(nc *awsv1.EC2NodeClass) {
				nc.Spec.ConnectionTracking = tc.ct
				nc.Spec.NetworkInterfaces = tc.layout
			})
			data := templateData(t, nc, tc.requestsEFA, tc.types...)
			var got []*ec2types.ConnectionTrackingSpecificationRequest
			for _, ni := range data.NetworkInterfaces {
				got = append(got, ni.ConnectionTrackingSpecification)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(ec2types.ConnectionTrackingSpecificationRequest{})); diff != "" {
				t.Errorf("connection tracking per interface (-want,+got):\n%s", diff)
			}
		})
	}
}
