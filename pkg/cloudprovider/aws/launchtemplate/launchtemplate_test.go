package launchtemplate_test

import (
	"encoding/base64"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

var opts = launchtemplate.Options{
	ClusterName:     "test-cluster",
	ClusterEndpoint: "https://test-cluster.example",
	CABundle:        base64.StdEncoding.EncodeToString([]byte("ca")),
	ClusterCIDR:     "10.100.0.0/16",
	ClusterDNSIP:    "10.100.0.10",
}

func nodeClass(edit func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec:       awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, Role: "role"},
		Status: awsv1.EC2NodeClassStatus{
			SecurityGroups:  []awsv1.SecurityGroup{{ID: "sg-1"}, {ID: "sg-2"}},
			InstanceProfile: "profile",
			AMIs: []awsv1.AMI{
				{ID: "ami-amd64", Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}},
				{ID: "ami-arm64", Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}}},
			},
		},
	}
	if edit != nil {
		edit(nc)
	}
	return nc
}

func instanceType(name, arch string, pods int64) *cloudprovider.InstanceType {
	capacity := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)}
	return scheduling.NewInstanceType(name, map[string]string{corev1.LabelArchStable: arch}, capacity, capacity, nil)
}

func request(nc *awsv1.EC2NodeClass, capacityType string, types ...*cloudprovider.InstanceType) launchtemplate.Request {
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}}}
	return launchtemplate.Request{
		NodeClass: nc, NodeClaim: claim, InstanceTypes: types, CapacityType: capacityType,
		Tags: map[string]string{"eks:eks-cluster-name": "test-cluster", "karpenter.sh/nodepool": "default"},
	}
}

func names(lts []*launchtemplate.LaunchTemplate) []string {
	var out []string
	for _, lt := range lts {
		out = append(out, lt.Name)
	}
	return out
}

func TestEnsureAllGroupsByAMIAndPods(t *testing.T) {
	ctx := t.Context()
	e := fake.NewEC2()
	p := launchtemplate.NewProvider(e, clocktesting.NewFakeClock(time.Now()), opts)
	lts, err := p.EnsureAll(ctx, request(nodeClass(nil), karpv1.CapacityTypeOnDemand,
		instanceType("m5.large", "amd64", 29), instanceType("c5.large", "amd64", 29),
		instanceType("m5.xlarge", "amd64", 58), instanceType("m6g.large", "arm64", 29)))
	if err != nil {
		t.Fatal(err)
	}
	if len(lts) != 3 {
		t.Fatalf("got launch templates %v, want 3 (amd64/29, amd64/58, arm64/29)", names(lts))
	}
	if lts[0].ImageID != "ami-amd64" || len(lts[0].InstanceTypes) != 2 || lts[2].ImageID != "ami-arm64" {
		t.Errorf("grouping %+v, want m5.large and c5.large together on ami-amd64, m6g.large on ami-arm64", lts)
	}
	for _, lt := range lts {
		if !strings.HasPrefix(lt.Name, launchtemplate.NamePrefix) {
			t.Errorf("name %s lacks %s", lt.Name, launchtemplate.NamePrefix)
		}
		data, ok := e.LaunchTemplateData(lt.Name)
		if !ok {
			t.Fatalf("%s was not created", lt.Name)
		}
		if aws.ToString(data.ImageId) != lt.ImageID || len(data.NetworkInterfaces) != 1 || len(data.NetworkInterfaces[0].Groups) != 2 {
			t.Errorf("%s data: image %s, ENIs %+v", lt.Name, aws.ToString(data.ImageId), data.NetworkInterfaces)
		}
		if got := data.BlockDeviceMappings; len(got) != 1 || aws.ToString(got[0].DeviceName) != "/dev/xvda" || aws.ToInt32(got[0].Ebs.VolumeSize) != 20 {
			t.Errorf("%s volumes %+v, want AL2023's default 20 GiB /dev/xvda", lt.Name, got)
		}
		userData, _ := base64.StdEncoding.DecodeString(aws.ToString(data.UserData))
		if !strings.Contains(string(userData), "maxPods:") {
			t.Errorf("%s user data names no maxPods:\n%s", lt.Name, userData)
		}
	}
	// The same request again reuses every template without calling EC2.
	e.ResetCalls()
	again, err := p.EnsureAll(ctx, request(nodeClass(nil), karpv1.CapacityTypeOnDemand,
		instanceType("m5.large", "amd64", 29), instanceType("c5.large", "amd64", 29),
		instanceType("m5.xlarge", "amd64", 58), instanceType("m6g.large", "arm64", 29)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names(again), ",") != strings.Join(names(lts), ",") || e.Calls("CreateLaunchTemplate")+e.Calls("DescribeLaunchTemplates") != 0 {
		t.Errorf("a second launch made %v with %d creates and %d describes, want the same templates and no call",
			names(again), e.Calls("CreateLaunchTemplate"), e.Calls("DescribeLaunchTemplates"))
	}
}

func TestChangesMakeNewTemplates(t *testing.T) {
	ctx := t.Context()
	base := func() string {
		p := launchtemplate.NewProvider(fake.NewEC2(), clocktesting.NewFakeClock(time.Now()), opts)
		lts, err := p.EnsureAll(ctx, request(nodeClass(nil), karpv1.CapacityTypeOnDemand, instanceType("m5.large", "amd64", 29)))
		if err != nil {
			t.Fatal(err)
		}
		return lts[0].Name
	}()
	tests := map[string]func(*awsv1.EC2NodeClass){
		"user data":      func(nc *awsv1.EC2NodeClass) { nc.Spec.UserData = aws.String("[settings]") },
		"security group": func(nc *awsv1.EC2NodeClass) { nc.Status.SecurityGroups = nc.Status.SecurityGroups[:1] },
		"monitoring":     func(nc *awsv1.EC2NodeClass) { nc.Spec.DetailedMonitoring = aws.Bool(true) },
		"volume": func(nc *awsv1.EC2NodeClass) {
			size := resource.MustParse("100Gi")
			nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: aws.String("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: &size}}}
		},
	}
	for name, edit := range tests {
		t.Run(name, func(t *testing.T) {
			p := launchtemplate.NewProvider(fake.NewEC2(), clocktesting.NewFakeClock(time.Now()), opts)
			lts, err := p.EnsureAll(ctx, request(nodeClass(edit), karpv1.CapacityTypeOnDemand, instanceType("m5.large", "amd64", 29)))
			if err != nil {
				t.Fatal(err)
			}
			if lts[0].Name == base {
				t.Errorf("changing the %s kept the template name %s", name, base)
			}
		})
	}
}

func TestGCDeletesUnusedTemplates(t *testing.T) {
	ctx := t.Context()
	e := fake.NewEC2()
	clk := clocktesting.NewFakeClock(time.Now())
	// A template an earlier process left, tagged with the cluster.
	if _, err := e.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(launchtemplate.NamePrefix + "1"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-old")},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate,
			Tags: []ec2types.Tag{{Key: aws.String("eks:eks-cluster-name"), Value: aws.String("test-cluster")}}}},
	}); err != nil {
		t.Fatal(err)
	}
	p := launchtemplate.NewProvider(e, clk, opts)
	if err := p.Hydrate(ctx); err != nil {
		t.Fatal(err)
	}
	used, err := p.EnsureAll(ctx, request(nodeClass(nil), karpv1.CapacityTypeOnDemand, instanceType("m5.large", "amd64", 29)))
	if err != nil {
		t.Fatal(err)
	}
	clk.Step(launchtemplate.TTL / 2)
	if _, err := p.EnsureAll(ctx, request(nodeClass(nil), karpv1.CapacityTypeOnDemand, instanceType("m5.large", "amd64", 29))); err != nil {
		t.Fatal(err)
	}
	clk.Step(launchtemplate.TTL / 2)
	if err := p.GC(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.LaunchTemplateData(launchtemplate.NamePrefix + "1"); ok {
		t.Error("the template nothing used for a TTL still exists")
	}
	if _, ok := e.LaunchTemplateData(used[0].Name); !ok {
		t.Error("the template used half a TTL ago was deleted")
	}
}

func TestConcurrentLaunchesCreateATemplateOnce(t *testing.T) {
	e := fake.NewEC2()
	p := launchtemplate.NewProvider(e, clocktesting.NewFakeClock(time.Now()), opts)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := p.EnsureAll(t.Context(), request(nodeClass(nil), karpv1.CapacityTypeSpot, instanceType("m5.large", "amd64", 29))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := e.Calls("CreateLaunchTemplate"); n != 1 {
		t.Errorf("20 concurrent launches made %d CreateLaunchTemplate calls, want 1", n)
	}
}

func TestNoAMIFitsIsAnError(t *testing.T) {
	p := launchtemplate.NewProvider(fake.NewEC2(), clocktesting.NewFakeClock(time.Now()), opts)
	_, err := p.EnsureAll(t.Context(), request(nodeClass(nil), karpv1.CapacityTypeOnDemand, instanceType("x.large", "s390x", 29)))
	if err == nil || !strings.Contains(err.Error(), "no instance type satisfies the requirements of amis") {
		t.Errorf("got %v, want an error naming the AMIs", err)
	}
}

func TestExplicitNetworkInterfaces(t *testing.T) {
	nc := nodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Spec.AssociatePublicIPAddress = aws.Bool(false)
		nc.Spec.NetworkInterfaces = []*awsv1.NetworkInterface{
			{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
			{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
		}
	})
	e := fake.NewEC2()
	p := launchtemplate.NewProvider(e, clocktesting.NewFakeClock(time.Now()), opts)
	lts, err := p.EnsureAll(t.Context(), request(nc, karpv1.CapacityTypeOnDemand, instanceType("p5.48xlarge", "amd64", 100)))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := e.LaunchTemplateData(lts[0].Name)
	enis := data.NetworkInterfaces
	if len(enis) != 2 {
		t.Fatalf("%d interfaces, want 2", len(enis))
	}
	if aws.ToString(enis[0].InterfaceType) != "interface" || aws.ToInt32(enis[0].NetworkCardIndex) != 0 || enis[0].AssociatePublicIpAddress == nil || len(enis[0].Groups) != 2 {
		t.Errorf("primary interface %+v, want card 0 type interface with the groups and the public IP setting", enis[0])
	}
	if aws.ToString(enis[1].InterfaceType) != "efa-only" || aws.ToInt32(enis[1].NetworkCardIndex) != 1 || enis[1].AssociatePublicIpAddress != nil || enis[1].Ipv4PrefixCount != nil {
		t.Errorf("EFA-only interface %+v, want card 1 without addresses", enis[1])
	}
}
