package ssm_test

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami"
	ssmcontroller "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/providers/ssm"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// version is a cluster version the test sets; the real source asks the
// API server's /version.
type version string

func (v version) Get(context.Context) (string, error) { return string(v), nil }

func TestAPulledReleaseIsReplacedOnTheNextCheck(t *testing.T) {
	epoch := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(epoch)
	ec2, ssm := fake.NewEC2(), fake.NewSSM()
	ec2.SetImageClock(clk)
	first := fake.PublishAMI(ec2, ssm, "al2023@latest", "1.31", epoch.Add(-48*time.Hour))
	amis := ami.NewProvider(ec2, ssm, version("1.31"), clk, ami.DefaultRefreshInterval)
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "uid", Generation: 1},
		Spec:       awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}},
	}
	resolved := func() []string {
		t.Helper()
		got, err := amis.List(t.Context(), nc)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, a := range got {
			ids = append(ids, a.ID)
		}
		return ids
	}
	std := "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id"
	resolved()

	c := ssmcontroller.NewController(amis)
	res, err := c.Reconcile(t.Context(), reconcile.Request{})
	if err != nil || res.RequeueAfter != ssmcontroller.Period {
		t.Fatalf("Reconcile = %v, %v; want a check again in %v", res, err, ssmcontroller.Period)
	}
	if !slices.Contains(resolved(), first[std]) {
		t.Fatal("nothing deprecated, yet the release changed")
	}

	// AWS pulls the release: the old AMI is deprecated, the parameter moves.
	second := fake.PublishAMI(ec2, ssm, "al2023@latest", "1.31", epoch.Add(-time.Hour))
	ec2.DeprecateImage(first[std], epoch)
	if _, err := c.Reconcile(t.Context(), reconcile.Request{}); err != nil {
		t.Fatal(err)
	}
	got := resolved()
	if slices.Contains(got, first[std]) || !slices.Contains(got, second[std]) {
		t.Errorf("after the check: %v, want %s instead of the pulled %s", got, second[std], first[std])
	}

	ec2.FailNext("DescribeImages", 1, fake.Throttling("DescribeImages"))
	if _, err := c.Reconcile(t.Context(), reconcile.Request{}); err == nil {
		t.Error("Reconcile succeeded while EC2 throttled")
	}
}
