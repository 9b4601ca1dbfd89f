package aws_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/test/awssim"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/awsenv"
)

// services are every AWS service karp calls.
var services = []string{"ec2", "ssm", "iam", "sqs", "pricing", "eks"}

// throttled are calls karp makes while it runs, each throttled three times
// in a row: the SDK's standard retryer gives up after three attempts, so
// each surfaces as an error at least once.
var throttled = map[string][]string{
	"ec2": {"CreateFleet", "DescribeInstances", "DescribeLaunchTemplates", "CreateLaunchTemplate"},
	"sqs": {"ReceiveMessage", "DeleteMessage"},
	"ssm": {"GetParameter"},
}

// TestFaultsLeaveTheControllerRunning throttles every AWS service at
// start-up, sends malformed and foreign messages into the interruption
// queue, throttles the calls karp makes while running past the SDK's
// retries, and takes SSM down while a new AMI is released. The controller
// keeps running and reports the failures (logs, metrics, the EC2NodeClass's
// AMIsReady condition, which may stay True with the error while the class
// keeps the AMIs it resolved before), deletes the bad messages and loses
// nothing: the pods created meanwhile run, and once SSM is back the class
// resolves the new release.
func TestFaultsLeaveTheControllerRunning(t *testing.T) {
	const name = "e2e-faults"
	e := awsenv.New(t)
	// 1. Every service throttles the controller's first two calls at
	// start-up (the SDK retries them).
	for _, service := range services {
		e.Sim.Router().Throttle(service, awssim.AnyOperation, 2)
	}
	e.StartKarp(t)
	e.SetUp(t, e.NodeClass(name), awsenv.NodePool(name))

	// 2. Malformed and foreign messages.
	for _, body := range []string{"not json at all", `{"version":"0","source":"aws.s3","detail-type":"Object Created","detail":{}}`, `{}`,
		`{"version":"0","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{"instance-id":"i-doesnotexist"}}`} {
		if err := e.Sim.SendMessage(t.Context(), body); err != nil {
			t.Fatal(err)
		}
	}
	// 3. Calls throttled past the SDK's retries while pods arrive.
	for service, ops := range throttled {
		for _, op := range ops {
			e.Sim.Router().Throttle(service, op, 3)
		}
	}
	framework.Create(t, e.Client, framework.SpreadOverHosts(framework.Deployment(name, name, name, 2, "500m")))
	e.WaitAvailable(t, name, 2)
	framework.Eventually(t, awsenv.ScaleTimeout, func(context.Context) (bool, string) {
		counts := e.Sim.SQS.Messages(e.Sim.QueueName())
		return counts.Visible == 0 && counts.InFlight == 0 && counts.Deleted >= 4, fmt.Sprintf("interruption queue: %+v", counts)
	})
	for service, ops := range throttled {
		for _, op := range ops {
			if e.Sim.Router().Calls(service, op) == 0 {
				t.Errorf("%s %s was never called", service, op)
			}
		}
	}

	// 4. SSM down while AWS releases a new AMI: the class reports it.
	e.Sim.SetSSMOutage(true)
	before := e.Sim.Router().Calls("ssm", "GetParameter")
	released := e.Sim.PublishAMI("al2023@latest")
	nc := &awsv1.EC2NodeClass{}
	framework.Eventually(t, driftTimeout, func(ctx context.Context) (bool, string) {
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return false, err.Error()
		}
		// The class reports the failure on AMIsReady: False, or True with
		// the error while it keeps serving the AMIs resolved before.
		c := nc.StatusConditions().Get(awsv1.ConditionTypeAMIsReady)
		return c != nil && (c.Status == metav1.ConditionFalse || strings.Contains(c.Message, "InternalServerError")), fmt.Sprintf("AMIsReady %+v", c)
	})
	e.Sim.SetSSMOutage(false)
	t.Logf("SSM GetParameter calls until the class reported the outage: %d", e.Sim.Router().Calls("ssm", "GetParameter")-before)
	framework.Eventually(t, driftTimeout, func(ctx context.Context) (bool, string) {
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return false, err.Error()
		}
		var ids []string
		for _, ami := range nc.Status.AMIs {
			ids = append(ids, ami.ID)
		}
		for _, id := range released {
			if !slices.Contains(ids, id) {
				return false, fmt.Sprintf("status AMIs %v lack the release %s; conditions %v", ids, id, nc.Status.Conditions)
			}
		}
		c := nc.StatusConditions().Get(awsv1.ConditionTypeAMIsReady)
		return nc.StatusConditions().IsTrue("Ready") && c != nil && !strings.Contains(c.Message, "InternalServerError"),
			fmt.Sprintf("conditions %v", nc.Status.Conditions)
	})

	// 5. Still running, and it said what went wrong.
	if e.Karp.Exited() {
		t.Fatal("the controller exited")
	}
	logs := e.Karp.Log()
	for _, want := range []string{"RequestLimitExceeded", "InternalServerError"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the controller log never mentions %s", want)
		}
	}
	metrics := e.Metrics()
	if n := awsenv.MetricSum(metrics, "karpenter_interruption_received_messages_total"); n < 4 {
		t.Errorf("karpenter_interruption_received_messages_total = %v, want at least the 4 messages sent", n)
	}
	if n := awsenv.MetricSum(metrics, "karpenter_interruption_received_messages_total", `message_type="malformed"`); n < 1 {
		t.Errorf("no message counted as malformed (karpenter_interruption_received_messages_total{message_type=\"malformed\"} = %v)", n)
	}
	if n := awsenv.MetricSum(metrics, "karpenter_cloudprovider_errors_total"); n == 0 {
		t.Error("karpenter_cloudprovider_errors_total is 0 after throttling every call")
	}
	if n := len(framework.AvailablePods(t.Context(), e.Client, name, nil)); n != 2 {
		t.Errorf("%d of 2 pods available", n)
	}
}
