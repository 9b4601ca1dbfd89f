package nodeclass_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/cache"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclass"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/pricing"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// withDryRun gives the world the catalog's instance types and the launch
// dry runs, as the provider wires them without --disable-dry-run.
func (w *world) withDryRun(t *testing.T) *world {
	t.Helper()
	infos, err := fake.CatalogInstanceTypes(instancetypes.EC2)
	if err != nil {
		t.Fatal(err)
	}
	w.ec2.SeedCatalog(infos, fake.RegionZones(region)...)
	prices, err := pricing.NewProvider(w.ec2, fake.NewPricing(), region, true, h.Clock)
	if err != nil {
		t.Fatal(err)
	}
	types := instancetype.NewProvider(w.ec2, prices, cache.NewUnavailableOfferings(h.Clock), nil, instancetype.Options{Region: region}, h.Clock)
	if err := types.Update(t.Context()); err != nil {
		t.Fatal(err)
	}
	templates := launchtemplate.NewProvider(w.ec2, h.Clock, launchtemplate.Options{
		ClusterName: clusterName, ClusterEndpoint: "https://test-cluster.example", CABundle: "dGVzdA==",
		ClusterCIDR: "10.100.0.0/16", ClusterDNSIP: "10.100.0.10",
	})
	w.providers.DryRun = nodeclass.NewDryRun(h.Env.Client, w.ec2, templates, types, clusterName, h.Clock)
	w.controller = nodeclass.NewController(h.Env.Client, h.Recorder, h.Clock, w.providers)
	return w
}

// Validation dry-runs the launch calls: a denied call is ValidationSucceeded
// False with upstream's reason and message, naming the call; allowed calls
// validate; without the dry runs (--disable-dry-run) nothing is called.
func TestLaunchDryRuns(t *testing.T) {
	tests := map[string]struct {
		deny        []string
		noDryRun    bool
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
		wantCalls   map[string]int
	}{
		"allowed": {
			wantStatus: metav1.ConditionTrue,
			wantCalls:  map[string]int{"CreateLaunchTemplate": 1, "CreateFleet": 1, "RunInstances": 1},
		},
		"CreateFleet denied": {
			deny:        []string{"CreateFleet"},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  "CreateFleetAuthCheckFailed",
			wantMessage: "Controller isn't authorized to call ec2:CreateFleet: User is not authorized to perform this operation because no identity-based policy allows it",
			wantCalls:   map[string]int{"CreateLaunchTemplate": 1, "CreateFleet": 1, "RunInstances": 0},
		},
		"RunInstances denied in every subnet": {
			deny:        []string{"RunInstances"},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  "RunInstancesAuthCheckFailed",
			wantMessage: "Controller isn't authorized to call ec2:RunInstances: User is not authorized to perform this operation because no identity-based policy allows it",
			wantCalls:   map[string]int{"CreateLaunchTemplate": 1, "CreateFleet": 1, "RunInstances": 3},
		},
		"CreateLaunchTemplate denied": {
			deny:        []string{"CreateLaunchTemplate"},
			wantStatus:  metav1.ConditionFalse,
			wantReason:  "CreateLaunchTemplateAuthCheckFailed",
			wantMessage: "Controller isn't authorized to call ec2:CreateLaunchTemplate: User is not authorized to perform this operation because no identity-based policy allows it",
			wantCalls:   map[string]int{"CreateLaunchTemplate": 1, "CreateFleet": 0, "RunInstances": 0},
		},
		"--disable-dry-run": {
			deny:       []string{"CreateLaunchTemplate", "CreateFleet", "RunInstances"},
			noDryRun:   true,
			wantStatus: metav1.ConditionTrue,
			wantCalls:  map[string]int{"CreateLaunchTemplate": 0, "CreateFleet": 0, "RunInstances": 0},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			if !tc.noDryRun {
				w.withDryRun(t)
			}
			w.ec2.Deny(tc.deny...)
			nc := nodeClass()
			create(t, nc)
			res, got := w.mustReconcile(t, nc.Name)
			c := condition(t, got, awsv1.ConditionTypeValidationSucceeded)
			if c.Status != tc.wantStatus || c.Reason != firstNonEmpty(tc.wantReason, awsv1.ConditionTypeValidationSucceeded) ||
				(tc.wantMessage != "" && c.Message != tc.wantMessage) {
				t.Errorf("ValidationSucceeded = %s %s %q, want %s %s %q", c.Status, c.Reason, c.Message, tc.wantStatus, tc.wantReason, tc.wantMessage)
			}
			if res.RequeueAfter <= 0 || res.RequeueAfter > 10*time.Minute {
				t.Errorf("requeue after %v, want at most the 10m validation interval", res.RequeueAfter)
			}
			for op, want := range tc.wantCalls {
				if n := w.ec2.Calls(op); n != want {
					t.Errorf("%d %s calls, want %d", n, op, want)
				}
			}
			if n := len(w.ec2.Instances()); n != 0 {
				t.Errorf("%d instances launched by validation, want none", n)
			}
		})
	}
}

// A verdict stands for 30 minutes for an unchanged NodeClass: reconciling
// again calls nothing, even once the permission is granted; an annotation
// or 30 minutes dry-run the calls again.
func TestLaunchDryRunVerdictsAreCached(t *testing.T) {
	w := newWorld(t).withDryRun(t)
	w.ec2.Deny("CreateFleet")
	nc := nodeClass()
	create(t, nc)
	w.mustReconcile(t, nc.Name)
	fleets := w.ec2.Calls("CreateFleet")
	if fleets != 1 {
		t.Fatalf("%d CreateFleet calls on the first reconcile, want 1", fleets)
	}

	w.ec2.Allow("CreateFleet")
	_, got := w.mustReconcile(t, nc.Name)
	if n := w.ec2.Calls("CreateFleet"); n != fleets {
		t.Errorf("%d CreateFleet calls after a reconcile of the unchanged class, want %d (cached)", n, fleets)
	}
	if c := condition(t, got, awsv1.ConditionTypeValidationSucceeded); c.Reason != "CreateFleetAuthCheckFailed" {
		t.Errorf("ValidationSucceeded %s %s, want the cached CreateFleetAuthCheckFailed", c.Status, c.Reason)
	}

	// Any annotation is part of the key (as upstream): validated afresh.
	got.Annotations = map[string]string{"example.com/touched": "true"}
	if err := h.Env.Client.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	_, got = w.mustReconcile(t, nc.Name)
	if n := w.ec2.Calls("CreateFleet"); n != fleets+1 {
		t.Errorf("%d CreateFleet calls after an annotation, want %d", n, fleets+1)
	}
	if c := condition(t, got, awsv1.ConditionTypeValidationSucceeded); c.Status != metav1.ConditionTrue {
		t.Errorf("ValidationSucceeded %s %s %q once allowed, want True", c.Status, c.Reason, c.Message)
	}

	// The verdict expires after 30 minutes.
	w.mustReconcile(t, nc.Name)
	if n := w.ec2.Calls("CreateFleet"); n != fleets+1 {
		t.Errorf("%d CreateFleet calls within the TTL, want %d", n, fleets+1)
	}
	h.Clock.Step(31 * time.Minute)
	w.mustReconcile(t, nc.Name)
	if n := w.ec2.Calls("CreateFleet"); n != fleets+2 {
		t.Errorf("%d CreateFleet calls after 31 minutes, want %d", n, fleets+2)
	}
}

// Throttling is no verdict: the reconcile fails (and is retried with
// backoff), nothing is cached, the next reconcile dry-runs again.
func TestThrottledDryRunIsRetried(t *testing.T) {
	w := newWorld(t).withDryRun(t)
	w.ec2.FailNext("CreateFleet", 1, fake.Throttling("CreateFleet"))
	nc := nodeClass()
	create(t, nc)
	if _, _, err := w.reconcile(t, nc.Name); err == nil {
		t.Fatal("a throttled CreateFleet dry run did not fail the reconcile")
	}
	_, got := w.mustReconcile(t, nc.Name)
	if c := condition(t, got, awsv1.ConditionTypeValidationSucceeded); c.Status != metav1.ConditionTrue {
		t.Errorf("ValidationSucceeded %s %s %q after the retry, want True", c.Status, c.Reason, c.Message)
	}
	if n := w.ec2.Calls("CreateFleet"); n != 2 {
		t.Errorf("%d CreateFleet calls, want 2 (nothing cached from the throttled one)", n)
	}
}

// The dry runs launch what a NodePool of the class would: its
// architecture (the arm64 AMI) and, when it allows it, dedicated tenancy.
func TestLaunchDryRunsFollowTheNodePools(t *testing.T) {
	w := newWorld(t).withDryRun(t)
	nc := nodeClass()
	create(t, nc)
	pool := test.MakeNodePool(nc.Name+"-pool").
		NodeClassRef(&karpv1.NodeClassReference{Group: awsv1.Group, Kind: awsv1.Kind, Name: nc.Name}).
		Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64").
		Requirement(awsv1.LabelInstanceTenancy, corev1.NodeSelectorOpIn, "default", "dedicated").Obj()
	if err := h.Env.Client.Create(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	ctx := context.WithoutCancel(t.Context())
	t.Cleanup(func() { _ = h.Env.Client.Delete(ctx, pool) })

	_, got := w.mustReconcile(t, nc.Name)
	if c := condition(t, got, awsv1.ConditionTypeValidationSucceeded); c.Status != metav1.ConditionTrue {
		t.Fatalf("ValidationSucceeded %s %s %q, want True", c.Status, c.Reason, c.Message)
	}
	out, err := w.ec2.DescribeLaunchTemplates(t.Context(), &ec2.DescribeLaunchTemplatesInput{})
	if err != nil || len(out.LaunchTemplates) != 1 {
		t.Fatalf("launch templates %v (error %v), want the dry runs' one", out, err)
	}
	data, _ := w.ec2.LaunchTemplateData(aws.ToString(out.LaunchTemplates[0].LaunchTemplateName))
	if want := w.released[al2023Path(w.k8s, "arm64", "standard")]; aws.ToString(data.ImageId) != want {
		t.Errorf("launch template image %s, want the arm64 standard AMI %s", aws.ToString(data.ImageId), want)
	}
	if data.Placement == nil || data.Placement.Tenancy != ec2types.TenancyDedicated {
		t.Errorf("launch template placement %+v, want dedicated tenancy", data.Placement)
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
