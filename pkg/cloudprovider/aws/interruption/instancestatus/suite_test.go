package instancestatus_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption/instancestatus"
	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

var h *operatortest.Harness

func TestMain(m *testing.M) { operatortest.Main(m, &h) }

const (
	zone = "us-west-2a"
	pool = "default"
)

// world is the poll over a fake EC2 account, acting through the
// interruption handler against the harness's API server.
type world struct {
	ec2        *fake.EC2
	controller *instancestatus.Controller
}

func setup(t *testing.T) *world {
	t.Helper()
	h.Reset(t)
	w := &world{ec2: fake.NewEC2()}
	w.ec2.SetPrice(fake.CapacityPool{InstanceType: "m5.large", Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand}, 0.096)
	if _, err := w.ec2.CreateLaunchTemplate(t.Context(), &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("lt"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1")}}); err != nil {
		t.Fatal(err)
	}
	w.controller = instancestatus.NewController(w.ec2, interruption.NewHandler(h.Client, nil, nil, h.Clock, h.Recorder), h.Clock)
	return w
}

// launch starts n instances in the fake account and returns their IDs.
func (w *world) launch(t *testing.T, n int32) []string {
	t.Helper()
	out, err := w.ec2.CreateFleet(t.Context(), &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(n), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
		},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("lt"), Version: aws.String("$Latest")},
			Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", AvailabilityZone: aws.String(zone),
				SubnetId: aws.String("subnet-a")}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != int(n) {
		t.Fatalf("launched %+v, want %d instances", out.Instances, n)
	}
	return out.Instances[0].InstanceIds
}

func (w *world) reconcile(t *testing.T) {
	t.Helper()
	res, err := w.controller.Reconcile(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res != (reconcile.Result{RequeueAfter: instancestatus.Interval}) {
		t.Fatalf("result %+v, want a poll again in %s", res, instancestatus.Interval)
	}
	h.Synced(t)
}

// owned creates a registered NodeClaim and its Node for the instance.
func owned(t *testing.T, name, instanceID string) {
	t.Helper()
	providerID := fmt.Sprintf("aws:///%s/%s", zone, instanceID)
	nc := test.MakeNodeClaim(name).NodePool(pool).Finalizers(karpv1.TerminationFinalizer).Labels(map[string]string{
		karpv1.NodePoolLabelKey:     pool,
		corev1.LabelTopologyZone:    zone,
		karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand,
	}).Obj()
	h.Registered(t, nc, providerID)
	h.Synced(t)
}

// counters are the process-wide counters a poll moves; tests compare
// before and after.
type counters struct {
	unhealthy map[instancestatus.Category]float64
	disrupted map[interruption.Kind]float64
}

func readCounters() counters {
	c := counters{unhealthy: map[instancestatus.Category]float64{}, disrupted: map[interruption.Kind]float64{}}
	for _, category := range []instancestatus.Category{instancestatus.CategoryInstanceStatus, instancestatus.CategorySystemStatus, instancestatus.CategoryEventStatus} {
		c.unhealthy[category] = testutil.ToFloat64(interruption.InstanceStatusUnhealthyTotal.WithLabelValues(string(category)))
	}
	for _, kind := range []interruption.Kind{interruption.KindInstanceStatus, interruption.KindSystemStatus, interruption.KindEventStatus} {
		c.disrupted[kind] = testutil.ToFloat64(metrics.NodeClaimsDisruptedTotal.WithLabelValues(string(kind), pool,
			karpv1.CapacityTypeOnDemand, "", metrics.TerminationModeForceful))
	}
	return c
}

// since is what the counters grew by from before; zero entries are left
// out.
func (c counters) since(before counters) counters {
	out := counters{unhealthy: map[instancestatus.Category]float64{}, disrupted: map[interruption.Kind]float64{}}
	for k, v := range c.unhealthy {
		if d := v - before.unhealthy[k]; d != 0 {
			out.unhealthy[k] = d
		}
	}
	for k, v := range c.disrupted {
		if d := v - before.disrupted[k]; d != 0 {
			out.disrupted[k] = d
		}
	}
	return out
}

func ago(d time.Duration) time.Time { return h.Clock.Now().Add(-d) }
