package nodeclass_test

import (
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclass"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

var allConditions = []string{
	awsv1.ConditionTypeAMIsReady,
	awsv1.ConditionTypeSubnetsReady,
	awsv1.ConditionTypeSecurityGroupsReady,
	awsv1.ConditionTypeInstanceProfileReady,
	awsv1.ConditionTypeCapacityReservationsReady,
	awsv1.ConditionTypeValidationSucceeded,
	awsv1.ConditionTypePlacementGroupReady,
	awsv1.ConditionTypeReady,
}

func al2023Path(k8s, arch, variant string) string {
	return "/aws/service/eks/optimized-ami/" + k8s + "/amazon-linux-2023/" + arch + "/" + variant + "/recommended/image_id"
}

func amiIDs(amis []awsv1.AMI) []string {
	out := []string{}
	for _, a := range amis {
		out = append(out, a.ID)
	}
	return out
}

func TestReadyWhenEverySelectorResolves(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass()
	create(t, nc)

	res, got := w.mustReconcile(t, nc.Name)

	if res.RequeueAfter != time.Minute {
		t.Errorf("requeue after %v, want a minute (the subnet refresh)", res.RequeueAfter)
	}
	wantSubnets := []awsv1.Subnet{
		{ID: "subnet-b", Zone: "us-west-2b", ZoneID: "usw2-az2"},
		{ID: "subnet-a", Zone: "us-west-2a", ZoneID: "usw2-az1"},
		{ID: "subnet-c", Zone: "us-west-2c", ZoneID: "usw2-az3"},
	}
	if diff := cmp.Diff(wantSubnets, got.Status.Subnets); diff != "" {
		t.Errorf("status.subnets, most free IPs first (-want,+got)\n%s", diff)
	}
	wantGroups := []awsv1.SecurityGroup{{ID: "sg-cluster", Name: "eks-cluster-sg"}, {ID: "sg-nodes", Name: "nodes"}}
	if diff := cmp.Diff(wantGroups, got.Status.SecurityGroups); diff != "" {
		t.Errorf("status.securityGroups (-want,+got)\n%s", diff)
	}
	std := func(arch string) []corev1.NodeSelectorRequirement {
		return []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}},
			{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
			{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		}
	}
	gotByID := map[string][]corev1.NodeSelectorRequirement{}
	for _, a := range got.Status.AMIs {
		gotByID[a.ID] = a.Requirements
	}
	if len(got.Status.AMIs) != 5 {
		t.Errorf("status.amis has %d entries, want the 5 al2023 variants: %v", len(got.Status.AMIs), amiIDs(got.Status.AMIs))
	}
	for arch, path := range map[string]string{"amd64": al2023Path(w.k8s, "x86_64", "standard"), "arm64": al2023Path(w.k8s, "arm64", "standard")} {
		if diff := cmp.Diff(std(arch), gotByID[w.released[path]]); diff != "" {
			t.Errorf("%s standard AMI requirements (-want,+got)\n%s", arch, diff)
		}
	}
	if got.Status.InstanceProfile != profile {
		t.Errorf("status.instanceProfile %q, want %q", got.Status.InstanceProfile, profile)
	}
	for _, ct := range allConditions {
		c := condition(t, got, ct)
		if c.Status != metav1.ConditionTrue || c.ObservedGeneration != got.Generation {
			t.Errorf("%s: %s (%s: %s) at generation %d, want True at %d", ct, c.Status, c.Reason, c.Message, c.ObservedGeneration, got.Generation)
		}
	}
}

// Each not-ready reason: the failing condition is False with upstream's
// reason and a message naming what matched nothing, Ready is False with the
// same reason, a Warning event says the same, and the NodeClass is looked
// at again within a minute.
func TestNotReadyReasons(t *testing.T) {
	for name, tc := range map[string]struct {
		edit        func(*world, *awsv1.EC2NodeClass)
		condition   string
		reason      string
		message     []string
		wantRequeue time.Duration
	}{
		"no subnet matches": {
			edit:      func(_ *world, nc *awsv1.EC2NodeClass) { nc.Spec.SubnetSelectorTerms[0].Tags[discoveryTag] = "nope" },
			condition: awsv1.ConditionTypeSubnetsReady, reason: awsv1.ConditionReasonSubnetsNotFound,
			message:     []string{"SubnetSelector did not match any Subnets", `subnetSelectorTerms: [{"tags":{"karpenter.sh/discovery":"nope"}}]`},
			wantRequeue: time.Minute,
		},
		"no security group matches": {
			edit: func(_ *world, nc *awsv1.EC2NodeClass) {
				nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{ID: "sg-missing"}, {Name: "absent"}}
			},
			condition: awsv1.ConditionTypeSecurityGroupsReady, reason: awsv1.ConditionReasonSecurityGroupsNotFound,
			message:     []string{"SecurityGroupSelector did not match any SecurityGroups", `{"id":"sg-missing"}`, `{"name":"absent"}`},
			wantRequeue: time.Minute,
		},
		"no AMI matches the tags": {
			edit: func(_ *world, nc *awsv1.EC2NodeClass) {
				nc.Spec.AMIFamily = ptr(awsv1.AMIFamilyAL2023)
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Tags: map[string]string{"team": "ml"}}}
			},
			condition: awsv1.ConditionTypeAMIsReady, reason: awsv1.ConditionReasonAMINotFound,
			message:     []string{"AMISelector did not match any AMIs", `amiSelectorTerms: [{"tags":{"team":"ml"}}]`},
			wantRequeue: time.Minute,
		},
		"an alias release not published for the cluster's version": {
			edit: func(_ *world, nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@v20990101"}}
			},
			condition: awsv1.ConditionTypeAMIsReady, reason: awsv1.ConditionReasonAMINotFound,
			message:     []string{`{"alias":"al2023@v20990101"}`, "Kubernetes 1."},
			wantRequeue: time.Minute,
		},
		"an AL2 alias on Kubernetes 1.33 and later": {
			edit: func(_ *world, nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2@latest"}}
			},
			condition: awsv1.ConditionTypeAMIsReady, reason: awsv1.ConditionReasonUnsupportedAlias,
			message:     []string{"al2@latest", "not supported on Kubernetes"},
			wantRequeue: time.Minute,
		},
		"the named instance profile does not exist": {
			edit:      func(_ *world, nc *awsv1.EC2NodeClass) { nc.Spec.InstanceProfile = ptr("Missing") },
			condition: awsv1.ConditionTypeInstanceProfileReady, reason: awsv1.ConditionReasonInstanceProfileMissing,
			message:     []string{`instance profile "Missing" (spec.instanceProfile) does not exist`},
			wantRequeue: time.Minute,
		},
		"the role does not exist": {
			edit:      func(_ *world, nc *awsv1.EC2NodeClass) { nc.Spec.InstanceProfile, nc.Spec.Role = nil, "Ghost" },
			condition: awsv1.ConditionTypeInstanceProfileReady, reason: awsv1.ConditionReasonInstanceProfileMissing,
			message:     []string{`role "Ghost" (spec.role) does not exist`},
			wantRequeue: time.Minute,
		},
		"a kubelet setting the family cannot apply": {
			edit: func(w *world, nc *awsv1.EC2NodeClass) {
				fake.PublishAMI(w.ec2, w.ssm, "bottlerocket@latest", w.k8s, h.Clock.Now().Add(-time.Hour))
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
				nc.Spec.Kubelet = &awsv1.KubeletConfiguration{PodsPerCore: ptr(int32(10))}
			},
			condition: awsv1.ConditionTypeValidationSucceeded, reason: awsv1.ConditionReasonUnsupportedKubelet,
			message:     []string{"spec.kubelet has fields not applied by the Bottlerocket AMI family that would be silently dropped: podsPerCore"},
			wantRequeue: time.Minute,
		},
		"a kubelet CEL expression without the NodeClassCEL gate": {
			edit: func(_ *world, nc *awsv1.EC2NodeClass) {
				nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPodsExpression: ptr("min(max_pods, 20)")}
			},
			condition: awsv1.ConditionTypeValidationSucceeded, reason: awsv1.ConditionReasonKubeletExpressionsDisabled,
			message:     []string{"NodeClassCEL feature gate is disabled"},
			wantRequeue: time.Minute,
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			nc := nodeClass()
			tc.edit(w, nc)
			create(t, nc)

			res, got := w.mustReconcile(t, nc.Name)

			c := condition(t, got, tc.condition)
			if c.Status != metav1.ConditionFalse || c.Reason != tc.reason || !contains(c.Message, tc.message...) {
				t.Errorf("%s: %s/%s %q; want False/%s with %q", tc.condition, c.Status, c.Reason, c.Message, tc.reason, tc.message)
			}
			ready := condition(t, got, awsv1.ConditionTypeReady)
			if ready.Status != metav1.ConditionFalse || ready.Reason != tc.reason || ready.Message != c.Message {
				t.Errorf("Ready: %s/%s %q; want False/%s with the condition's message", ready.Status, ready.Reason, ready.Message, tc.reason)
			}
			if res.RequeueAfter == 0 || res.RequeueAfter > tc.wantRequeue {
				t.Errorf("requeue after %v, want within %v", res.RequeueAfter, tc.wantRequeue)
			}
			if note := h.EventNote(t, awsv1.Kind, nc.Name, tc.reason); !contains(note, tc.message...) {
				t.Errorf("%s event note %q, want it to contain %q", tc.reason, note, tc.message)
			}
			if tc.condition != awsv1.ConditionTypeValidationSucceeded {
				v := condition(t, got, awsv1.ConditionTypeValidationSucceeded)
				if v.Status != metav1.ConditionFalse || v.Reason != awsv1.ConditionReasonDependenciesNotReady {
					t.Errorf("ValidationSucceeded %s/%s, want False/%s", v.Status, v.Reason, awsv1.ConditionReasonDependenciesNotReady)
				}
			}
		})
	}
}

func TestReadyOnceTheSelectorMatches(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass()
	nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"team": "new"}}}
	create(t, nc)
	if _, got := w.mustReconcile(t, nc.Name); condition(t, got, awsv1.ConditionTypeReady).Status != metav1.ConditionFalse {
		t.Fatal("Ready before any subnet is tagged")
	}

	w.ec2.AddSubnets(fake.NewSubnet("subnet-new", "us-west-2c", "usw2-az3", 50, map[string]string{"team": "new"}))
	h.Clock.Step(subnetRefresh())
	_, got := w.mustReconcile(t, nc.Name)

	if diff := cmp.Diff([]awsv1.Subnet{{ID: "subnet-new", Zone: "us-west-2c", ZoneID: "usw2-az3"}}, got.Status.Subnets); diff != "" {
		t.Errorf("status.subnets after the refresh (-want,+got)\n%s", diff)
	}
	if c := condition(t, got, awsv1.ConditionTypeReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready %s (%s: %s), want True once a subnet matches", c.Status, c.Reason, c.Message)
	}
}

func subnetRefresh() time.Duration { return time.Minute + time.Second }

func TestASpecChangeIsResolvedAtOnce(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass()
	create(t, nc)
	_, stored := w.mustReconcile(t, nc.Name)

	stored.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-other"}}
	if err := h.Env.Client.Update(t.Context(), stored); err != nil {
		t.Fatal(err)
	}
	_, got := w.mustReconcile(t, nc.Name)

	if diff := cmp.Diff([]awsv1.Subnet{{ID: "subnet-other", Zone: "us-west-2a", ZoneID: "usw2-az1"}}, got.Status.Subnets); diff != "" {
		t.Errorf("status.subnets right after the spec change (-want,+got)\n%s", diff)
	}
	if c := condition(t, got, awsv1.ConditionTypeReady); c.Status != metav1.ConditionTrue || c.ObservedGeneration != got.Generation {
		t.Errorf("Ready %s at generation %d, want True at %d", c.Status, c.ObservedGeneration, got.Generation)
	}
}

func TestANewlyPublishedAMIReplacesTheOldOne(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass()
	create(t, nc)
	_, before := w.mustReconcile(t, nc.Name)
	stdPath := al2023Path(w.k8s, "x86_64", "standard")
	if !contains(fmtIDs(before.Status.AMIs), w.released[stdPath]) {
		t.Fatalf("first release %s not in status %v", w.released[stdPath], amiIDs(before.Status.AMIs))
	}

	next := fake.PublishAMI(w.ec2, w.ssm, "al2023@latest", w.k8s, h.Clock.Now())
	h.Clock.Step(ami.AliasParameterTTL + time.Minute)
	_, got := w.mustReconcile(t, nc.Name)

	want := []string{}
	for _, id := range next {
		want = append(want, id)
	}
	if diff := cmp.Diff(want, amiIDs(got.Status.AMIs), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("status.amis after the new release (-want,+got)\n%s", diff)
	}
}

func fmtIDs(amis []awsv1.AMI) string {
	out := ""
	for _, id := range amiIDs(amis) {
		out += id + " "
	}
	return out
}

func TestAnSSMOutageKeepsTheLastResolvedAMIs(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass()
	create(t, nc)
	_, before := w.mustReconcile(t, nc.Name)

	h.Clock.Step(ami.AliasParameterTTL + time.Minute)
	w.ssm.FailNext("GetParameter", 1, fake.Throttling("GetParameter"))
	_, got, err := w.reconcile(t, nc.Name)

	if err == nil || !contains(err.Error(), "RequestLimitExceeded") {
		t.Errorf("reconcile error %v, want the SSM throttling reported", err)
	}
	if diff := cmp.Diff(before.Status.AMIs, got.Status.AMIs); diff != "" {
		t.Errorf("status.amis changed during the outage (-before,+after)\n%s", diff)
	}
	c := condition(t, got, awsv1.ConditionTypeAMIsReady)
	if c.Status != metav1.ConditionTrue || !contains(c.Message, "RequestLimitExceeded", "keeping the 5 AMIs resolved before") {
		t.Errorf("AMIsReady %s %q, want True saying it keeps the 5 AMIs and why", c.Status, c.Message)
	}
	if r := condition(t, got, awsv1.ConditionTypeReady); r.Status != metav1.ConditionTrue {
		t.Errorf("Ready %s during an SSM outage with AMIs resolved, want True", r.Status)
	}
	if note := h.EventNote(t, awsv1.Kind, nc.Name, nodeclass.ReasonAMIResolutionFailed); !contains(note, "RequestLimitExceeded") {
		t.Errorf("event note %q, want the SSM error", note)
	}

	_, got = w.mustReconcile(t, nc.Name)
	if c := condition(t, got, awsv1.ConditionTypeAMIsReady); c.Status != metav1.ConditionTrue || c.Message != "" {
		t.Errorf("after SSM recovered: AMIsReady %s %q, want True with no message", c.Status, c.Message)
	}
}

func TestAFailureBeforeAnythingResolvedIsUnknown(t *testing.T) {
	w := newWorld(t)
	w.ec2.FailNext("DescribeSubnets", 1, fake.APIError("UnauthorizedOperation", "You are not authorized to perform this operation."))
	nc := nodeClass()
	create(t, nc)

	_, got, err := w.reconcile(t, nc.Name)

	if err == nil {
		t.Error("reconcile succeeded while DescribeSubnets was refused")
	}
	c := condition(t, got, awsv1.ConditionTypeSubnetsReady)
	if c.Status != metav1.ConditionUnknown || c.Reason != nodeclass.ReasonSubnetResolutionFailed || !contains(c.Message, "UnauthorizedOperation") {
		t.Errorf("SubnetsReady %s/%s %q, want Unknown/%s with the EC2 error", c.Status, c.Reason, c.Message, nodeclass.ReasonSubnetResolutionFailed)
	}
	if r := condition(t, got, awsv1.ConditionTypeReady); r.Status != metav1.ConditionUnknown {
		t.Errorf("Ready %s, want Unknown", r.Status)
	}
	if len(got.Status.AMIs) != 5 || len(got.Status.SecurityGroups) != 2 {
		t.Errorf("the other steps did not run: %d AMIs, %d groups", len(got.Status.AMIs), len(got.Status.SecurityGroups))
	}
}

func TestCapacityReservationsAreDiscovered(t *testing.T) {
	w := newWorld(t)
	end := h.Clock.Now().Add(30 * time.Second)
	block := fake.NewCapacityReservation("cr-block", "p5.48xlarge", "us-west-2b", 1, map[string]string{"team": "ml"})
	block.ReservationType, block.EndDate = ec2types.CapacityReservationTypeCapacityBlock, &end
	w.ec2.AddCapacityReservations(fake.NewCapacityReservation("cr-odcr", "m5.large", "us-west-2a", 2, nil), block)
	nc := nodeClass()
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-odcr"}, {Tags: map[string]string{"team": "ml"}}}
	create(t, nc)

	res, got := w.mustReconcile(t, nc.Name)

	want := []awsv1.CapacityReservation{
		{ID: "cr-block", AvailabilityZone: "us-west-2b", InstanceType: "p5.48xlarge", InstanceMatchCriteria: "open", OwnerID: fake.AccountID,
			ReservationType: "capacity-block", State: "expiring", EndTime: &metav1.Time{Time: end}},
		{ID: "cr-odcr", AvailabilityZone: "us-west-2a", InstanceType: "m5.large", InstanceMatchCriteria: "open", OwnerID: fake.AccountID,
			ReservationType: "default", State: "active"},
	}
	if diff := cmp.Diff(want, got.Status.CapacityReservations, cmpopts.EquateApproxTime(time.Second)); diff != "" {
		t.Errorf("status.capacityReservations (-want,+got)\n%s", diff)
	}
	if c := condition(t, got, awsv1.ConditionTypeCapacityReservationsReady); c.Status != metav1.ConditionTrue {
		t.Errorf("CapacityReservationsReady %s (%s)", c.Status, c.Message)
	}
	if res.RequeueAfter != 30*time.Second {
		t.Errorf("requeue after %v, want 30s, when the block ends", res.RequeueAfter)
	}
}

func TestNoReservationMatchingIsStillReady(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass()
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0123456789abcdef0"}}
	create(t, nc)

	_, got := w.mustReconcile(t, nc.Name)

	if c := condition(t, got, awsv1.ConditionTypeCapacityReservationsReady); c.Status != metav1.ConditionTrue || len(got.Status.CapacityReservations) != 0 {
		t.Errorf("CapacityReservationsReady %s with %d reservations, want True with none", c.Status, len(got.Status.CapacityReservations))
	}
	if c := condition(t, got, awsv1.ConditionTypeReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready %s (%s), want True", c.Status, c.Message)
	}
}

func TestReservationsAreNotUsedWithTheGateOff(t *testing.T) {
	w := newWorld(t)
	w.ec2.AddCapacityReservations(fake.NewCapacityReservation("cr-odcr", "m5.large", "us-west-2a", 2, nil))
	providers := w.providers
	providers.CapacityReservations = nil
	w.controller = nodeclass.NewController(h.Env.Client, h.Recorder, h.Clock, providers)
	nc := nodeClass()
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-odcr"}}
	create(t, nc)

	_, got := w.mustReconcile(t, nc.Name)

	c := condition(t, got, awsv1.ConditionTypeCapacityReservationsReady)
	if c.Status != metav1.ConditionTrue || !contains(c.Message, "ReservedCapacity feature gate is off") || len(got.Status.CapacityReservations) != 0 {
		t.Errorf("CapacityReservationsReady %s %q with %d reservations; want True, none used, saying why", c.Status, c.Message, len(got.Status.CapacityReservations))
	}
}

// Reconciles within a refresh interval are served from the providers'
// caches: one round of AWS calls per NodeClass per interval, however often
// the NodeClass is reconciled (status patches, NodePool events, requeues).
func TestReconcilesWithinAnIntervalCallAWSOnce(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass()
	create(t, nc)

	for range 10 {
		w.mustReconcile(t, nc.Name)
	}

	want := map[string]int{
		"DescribeSubnets":        1,
		"DescribeSecurityGroups": 1,
		"DescribeImages":         1,
		// One parameter per al2023 variant: x86_64 standard, nvidia,
		// neuron; arm64 standard, nvidia.
		"GetParameter":                 5,
		"GetInstanceProfile":           1,
		"DescribeCapacityReservations": 0,
	}
	got := map[string]int{
		"DescribeSubnets":              w.ec2.Calls("DescribeSubnets"),
		"DescribeSecurityGroups":       w.ec2.Calls("DescribeSecurityGroups"),
		"DescribeImages":               w.ec2.Calls("DescribeImages"),
		"GetParameter":                 w.ssm.Calls("GetParameter"),
		"GetInstanceProfile":           w.iam.Calls("GetInstanceProfile"),
		"DescribeCapacityReservations": w.ec2.Calls("DescribeCapacityReservations"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AWS calls for 10 reconciles within a minute (-want,+got)\n%s", diff)
	}

	// After the minute the subnet, security group and AMI selectors are
	// queried again; the alias parameters (a day) and the instance profile
	// (15 minutes) are still cached.
	h.Clock.Step(time.Minute + time.Second)
	w.mustReconcile(t, nc.Name)
	want = map[string]int{
		"DescribeSubnets":              2,
		"DescribeSecurityGroups":       2,
		"DescribeImages":               2,
		"GetParameter":                 5,
		"GetInstanceProfile":           1,
		"DescribeCapacityReservations": 0,
	}
	got = map[string]int{
		"DescribeSubnets":              w.ec2.Calls("DescribeSubnets"),
		"DescribeSecurityGroups":       w.ec2.Calls("DescribeSecurityGroups"),
		"DescribeImages":               w.ec2.Calls("DescribeImages"),
		"GetParameter":                 w.ssm.Calls("GetParameter"),
		"GetInstanceProfile":           w.iam.Calls("GetInstanceProfile"),
		"DescribeCapacityReservations": w.ec2.Calls("DescribeCapacityReservations"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AWS calls after the minute (-want,+got)\n%s", diff)
	}
}

// A term matching nothing beside terms that match leaves the NodeClass
// Ready, but the condition and a Warning event name the term.
func TestTermsMatchingNothingAreNamedWhileOthersMatch(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass()
	nc.Spec.SubnetSelectorTerms = append(nc.Spec.SubnetSelectorTerms, awsv1.SubnetSelectorTerm{ID: "subnet-0typo"})
	nc.Spec.SecurityGroupSelectorTerms = append(nc.Spec.SecurityGroupSelectorTerms, awsv1.SecurityGroupSelectorTerm{Name: "absent"})
	w.ec2.AddImages(fake.NewImage("ami-0golden", "golden", ec2types.ArchitectureValuesX8664, h.Clock.Now(), nil))
	nc.Spec.AMIFamily = ptr(awsv1.AMIFamilyAL2023)
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0golden"}, {SSMParameter: "/golden/missing"}}
	create(t, nc)

	_, got := w.mustReconcile(t, nc.Name)

	for _, tc := range []struct {
		condition, reason string
		message           []string
	}{
		{awsv1.ConditionTypeSubnetsReady, nodeclass.ReasonSubnetTermsUnmatched, []string{`subnetSelectorTerms [{"id":"subnet-0typo"}] matched no subnet`}},
		{awsv1.ConditionTypeSecurityGroupsReady, nodeclass.ReasonSecurityGroupTermsUnmatched, []string{`securityGroupSelectorTerms [{"name":"absent"}] matched no security group`}},
		{awsv1.ConditionTypeAMIsReady, nodeclass.ReasonAMITermsUnmatched, []string{`amiSelectorTerms [{"ssmParameter":"/golden/missing"}] matched no AMI`}},
	} {
		c := condition(t, got, tc.condition)
		if c.Status != metav1.ConditionTrue || !contains(c.Message, tc.message...) {
			t.Errorf("%s %s %q, want True naming %q", tc.condition, c.Status, c.Message, tc.message)
		}
		if note := h.EventNote(t, awsv1.Kind, nc.Name, tc.reason); !contains(note, tc.message...) {
			t.Errorf("%s event %q, want %q", tc.reason, note, tc.message)
		}
	}
	if c := condition(t, got, awsv1.ConditionTypeReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready %s, want True: the other terms matched", c.Status)
	}
	if len(got.Status.Subnets) != 3 || len(got.Status.SecurityGroups) != 2 {
		t.Errorf("status has %d subnets and %d groups, want the 3 and 2 the other terms matched", len(got.Status.Subnets), len(got.Status.SecurityGroups))
	}

	// The user fixes the terms: the messages go.
	got.Spec.SubnetSelectorTerms = got.Spec.SubnetSelectorTerms[:1]
	got.Spec.SecurityGroupSelectorTerms = got.Spec.SecurityGroupSelectorTerms[:1]
	got.Spec.AMISelectorTerms = got.Spec.AMISelectorTerms[:1]
	if err := h.Env.Client.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	_, got = w.mustReconcile(t, nc.Name)
	for _, ct := range []string{awsv1.ConditionTypeSubnetsReady, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeAMIsReady} {
		if c := condition(t, got, ct); c.Status != metav1.ConditionTrue || c.Message != "" {
			t.Errorf("after the fix: %s %s %q, want True with no message", ct, c.Status, c.Message)
		}
	}
}
