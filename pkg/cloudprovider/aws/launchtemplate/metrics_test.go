package launchtemplate_test

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// Creating a launch template records the size of its decoded user data
// under the EC2NodeClass's name; deleting the NodeClass's templates drops
// the series.
func TestUserDataSizeIsRecordedPerNodeClass(t *testing.T) {
	ctx := t.Context()
	reg := prometheus.NewPedanticRegistry()
	if err := launchtemplate.Register(reg); err != nil {
		t.Fatal(err)
	}
	e := fake.NewEC2()
	p := launchtemplate.NewProvider(e, clocktesting.NewFakeClock(time.Now()), opts)
	nc := nodeClass(func(nc *awsv1.EC2NodeClass) { nc.Name = "sized" })
	lts, err := p.EnsureAll(ctx, request(nc, karpv1.CapacityTypeOnDemand, instanceType("m5.large", "amd64", 29)))
	if err != nil {
		t.Fatal(err)
	}
	data, ok := e.LaunchTemplateData(lts[0].Name)
	if !ok {
		t.Fatalf("%s was not created", lts[0].Name)
	}
	raw, err := base64.StdEncoding.DecodeString(aws.ToString(data.UserData))
	if err != nil || len(raw) == 0 {
		t.Fatalf("user data of %s: %d bytes, %v", lts[0].Name, len(raw), err)
	}
	if got, ok := userDataBytes(t, reg, "sized"); !ok || got != float64(len(raw)) {
		t.Errorf("userdata_bytes{nodeclass=sized} = %v (present %v), want %d", got, ok, len(raw))
	}

	e.IgnoreFilters = true
	if err := p.DeleteAll(ctx, "sized"); err != nil {
		t.Fatal(err)
	}
	if got, ok := userDataBytes(t, reg, "sized"); ok {
		t.Errorf("userdata_bytes{nodeclass=sized} = %v after the NodeClass's templates were deleted, want no series", got)
	}
}

// userDataBytes scrapes reg for the NodeClass's user data size (other
// tests of the package create templates of other NodeClasses).
func userDataBytes(t *testing.T, reg prometheus.Gatherer, nodeClass string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "karpenter_ec2nodeclasses_userdata_bytes" {
			continue
		}
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == "nodeclass" && l.GetValue() == nodeClass {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}
