package awsprovisioning_test

import (
	"flag"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption"
	"github.com/karp-autoscaler/karp/pkg/operator"
	"github.com/karp-autoscaler/karp/pkg/options"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
	"github.com/karp-autoscaler/karp/pkg/test/awstest"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest/awsprocess"
)

const queueName = "karp-test-cluster"

// TestSpotInterruptionOnAWS runs the whole controller with
// --interruption-queue against the fakes: a spot warning for the instance
// of a launched NodeClaim, sent to the queue, deletes that NodeClaim (its
// instance terminated), and the pod's next NodeClaim is launched by a
// CreateFleet that no longer offers the interrupted type in that zone.
func TestSpotInterruptionOnAWS(t *testing.T) {
	ctx := t.Context()
	clients := awsCloud(t, awsprocess.ServerVersion(t, env.Config))
	queue := fake.NewSQS(clock.RealClock{})
	if _, err := queue.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: awssdk.String(queueName)}); err != nil {
		t.Fatal(err)
	}
	clients.SQS = queue
	runAWSController(t, clients, "--interruption-queue="+queueName)

	scaleOut(t, test.MakeNodePool("default").NodeClassRef(awsv1.NodeClassReference("default")).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot).
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large", "m5a.large", "m6i.large").Obj())

	first := launchedNodeClaim(t, "")
	instanceType, zone := first.Labels[corev1.LabelInstanceTypeStable], first.Labels[corev1.LabelTopologyZone]
	id, err := instance.ParseProviderID(first.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	url, _ := queue.Queue(queueName)
	body := interruption.EventBody(interruption.KindSpotInterrupted, id, time.Now(), awstest.Region)
	if _, err := queue.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body}); err != nil {
		t.Fatal(err)
	}

	e := clients.EC2.(*fake.EC2)
	awsprocess.Poll(t, "the interrupted NodeClaim gone and its instance terminated", func() bool {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(first), &karpv1.NodeClaim{})
		for _, i := range e.Instances() {
			if awssdk.ToString(i.InstanceId) == id && i.State != nil && i.State.Name != ec2types.InstanceStateNameTerminated && i.State.Name != ec2types.InstanceStateNameShuttingDown {
				return false
			}
		}
		return client.IgnoreNotFound(err) == nil && err != nil
	})
	if got := queue.Messages(queueName); got.Deleted != 1 || got.Visible+got.InFlight != 0 {
		t.Errorf("queue = %+v, want the message deleted", got)
	}
	second := launchedNodeClaim(t, first.Name)
	fleets := e.CreateFleetInputs()
	last := fleets[len(fleets)-1]
	zoneOf := map[string]string{}
	for i, z := range awstest.Zones {
		zoneOf["subnet-"+string(rune('a'+i))] = z.Name
	}
	for _, cfg := range last.LaunchTemplateConfigs {
		for _, o := range cfg.Overrides {
			if string(o.InstanceType) == instanceType && zoneOf[awssdk.ToString(o.SubnetId)] == zone {
				t.Errorf("the replacement's CreateFleet still offers the interrupted %s in %s", instanceType, zone)
			}
		}
	}
	if second.Labels[corev1.LabelInstanceTypeStable] == instanceType && second.Labels[corev1.LabelTopologyZone] == zone {
		t.Errorf("the replacement launched on the interrupted offering %s/%s", instanceType, zone)
	}
}

// launchedNodeClaim waits for a launched NodeClaim other than skip.
func launchedNodeClaim(t *testing.T, skip string) *karpv1.NodeClaim {
	t.Helper()
	var launched *karpv1.NodeClaim
	awsprocess.Poll(t, "a launched NodeClaim", func() bool {
		list := &karpv1.NodeClaimList{}
		if env.Client.List(t.Context(), list) != nil {
			return false
		}
		for i := range list.Items {
			if nc := &list.Items[i]; nc.Name != skip && nc.DeletionTimestamp.IsZero() && nc.StatusConditions().IsTrue(karpv1.ConditionTypeLaunched) {
				launched = nc
				return true
			}
		}
		return false
	})
	return launched
}

// runAWSController runs the controller process over clients, with quick
// provisioning batches and extra flags, until the test ends; then it
// deletes what the test made.
func runAWSController(t *testing.T, clients aws.Clients, extra ...string) {
	t.Helper()
	t.Cleanup(func() { cleanUp(t) }) // after the controller stopped: cleanups run last first
	awsprocess.Run(t, env.Config, clients, append([]string{"--batch-idle-duration=200ms", "--batch-max-duration=2s"}, extra...)...)
}

// TestInterruptionControllerOnlyWithAQueue: the SQS controller is built
// only when --interruption-queue is set, and a queue without an SQS
// client is refused at start with the flag named.
func TestInterruptionControllerOnlyWithAQueue(t *testing.T) {
	k8s := awsprocess.ServerVersion(t, env.Config)
	for name, tc := range map[string]struct {
		flags      []string
		sqs        bool
		wantErr    string
		wantListed bool
	}{
		"no queue":           {},
		"a queue":            {flags: []string{"--interruption-queue=" + queueName}, sqs: true, wantListed: true},
		"a queue, no client": {flags: []string{"--interruption-queue=" + queueName}, wantErr: "--interruption-queue"},
	} {
		t.Run(name, func(t *testing.T) {
			opts, err := options.Parse(flag.NewFlagSet("karp", flag.ContinueOnError), awsprocess.Args(tc.flags...))
			if err != nil {
				t.Fatal(err)
			}
			clients := awsCloud(t, k8s)
			if tc.sqs {
				clients.SQS = fake.NewSQS(clock.RealClock{})
			}
			op, err := operator.New(t.Context(), env.Config, opts, operator.WithoutControllerNameValidation())
			if err != nil {
				t.Fatal(err)
			}
			provider, err := aws.NewProvider(t.Context(), op.AWSDependencies(opts, env.Config), clients)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			listed := false
			for _, c := range provider.Controllers {
				listed = listed || c.Name() == "interruption"
			}
			if listed != tc.wantListed {
				t.Errorf("interruption controller listed = %v, want %v", listed, tc.wantListed)
			}
		})
	}
}
