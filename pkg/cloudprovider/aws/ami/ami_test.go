package ami_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/version"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// k8sVersion is a cluster version the tests set; the real source asks the
// API server's /version.
type k8sVersion string

func (v k8sVersion) Get(_ context.Context) (string, error) { return string(v), nil }

func minorOf(t *testing.T, k8s string) int {
	t.Helper()
	m, err := version.Minor(k8s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

type world struct {
	ec2   *fake.EC2
	ssm   *fake.SSM
	clock *clocktesting.FakeClock
	p     *ami.Provider
}

func newWorld(k8s string) *world {
	w := &world{ec2: fake.NewEC2(), ssm: fake.NewSSM(), clock: clocktesting.NewFakeClock(epoch)}
	w.ec2.SetImageClock(w.clock)
	w.p = ami.NewProvider(w.ec2, w.ssm, k8sVersion(k8s), w.clock, ami.DefaultRefreshInterval)
	return w
}

func nodeClass(terms ...awsv1.AMISelectorTerm) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "uid-1", Generation: 1},
		Spec:       awsv1.EC2NodeClassSpec{AMISelectorTerms: terms},
	}
}

func (w *world) list(t *testing.T, nc *awsv1.EC2NodeClass) []ami.AMI {
	t.Helper()
	got, err := w.p.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func ids(amis []ami.AMI) []string {
	out := []string{}
	for _, a := range amis {
		out = append(out, a.ID)
	}
	return out
}

var (
	standard = []corev1.NodeSelectorRequirement{
		{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
	}
	nvidia = []corev1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}}
	neuron = []corev1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists}}
)

func reqs(a string, variant []corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement {
	return append(arch(a), variant...)
}

func TestAL2023AliasResolvesEveryVariant(t *testing.T) {
	w := newWorld("1.31")
	published := fake.PublishAMI(w.ec2, w.ssm, "al2023@latest", "1.31", epoch.Add(-time.Hour))
	path := func(arch, variant string) string {
		return published["/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/"+arch+"/"+variant+"/recommended/image_id"]
	}
	got := w.list(t, nodeClass(awsv1.AMISelectorTerm{Alias: "al2023@latest"}))
	want := []ami.AMI{
		{ID: path("x86_64", "standard"), Requirements: reqs("amd64", standard)},
		{ID: path("x86_64", "nvidia"), Requirements: reqs("amd64", nvidia)},
		{ID: path("x86_64", "neuron"), Requirements: reqs("amd64", neuron)},
		{ID: path("arm64", "standard"), Requirements: reqs("arm64", standard)},
		{ID: path("arm64", "nvidia"), Requirements: reqs("arm64", nvidia)},
	}
	opts := []cmp.Option{
		cmpopts.IgnoreFields(ami.AMI{}, "Name", "CreationDate"),
		cmpopts.SortSlices(func(a, b ami.AMI) bool { return a.ID < b.ID }),
	}
	if diff := cmp.Diff(want, got, opts...); diff != "" {
		t.Errorf("(-want,+got)\n%s", diff)
	}
}

func TestBottlerocketX86ImageServesStandardAndNeuron(t *testing.T) {
	w := newWorld("1.31")
	published := fake.PublishAMI(w.ec2, w.ssm, "bottlerocket@latest", "1.31", epoch.Add(-time.Hour))
	x86 := published["/aws/service/bottlerocket/aws-k8s-1.31/x86_64/latest/image_id"]
	var sets [][]corev1.NodeSelectorRequirement
	for _, a := range w.list(t, nodeClass(awsv1.AMISelectorTerm{Alias: "bottlerocket@latest"})) {
		if a.ID == x86 {
			sets = append(sets, a.Requirements)
		}
	}
	want := [][]corev1.NodeSelectorRequirement{reqs("amd64", neuron), reqs("amd64", standard)}
	if diff := cmp.Diff(want, sets, cmpopts.SortSlices(func(a, b []corev1.NodeSelectorRequirement) bool { return len(a) < len(b) })); diff != "" {
		t.Errorf("(-want,+got)\n%s", diff)
	}
}

func TestAliasSkipsUnpublishedVariants(t *testing.T) {
	w := newWorld("1.31")
	fake.PublishAMI(w.ec2, w.ssm, "al2023@latest", "1.31", epoch.Add(-time.Hour))
	w.ssm.DeleteParameter("/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/neuron/recommended/image_id")
	if got := w.list(t, nodeClass(awsv1.AMISelectorTerm{Alias: "al2023@latest"})); len(got) != 4 {
		t.Errorf("resolved %d AMIs, want the 4 published variants", len(got))
	}
}

func TestAliasWithNothingPublishedMatchesNothing(t *testing.T) {
	w := newWorld("1.31")
	fake.PublishAMI(w.ec2, w.ssm, "al2023@latest", "1.30", epoch)
	if got := w.list(t, nodeClass(awsv1.AMISelectorTerm{Alias: "al2023@latest"})); len(got) != 0 {
		t.Errorf("resolved %v for 1.31 with only 1.30 published, want none", ids(got))
	}
}

func TestAliasFailsOnAnSSMOutage(t *testing.T) {
	w := newWorld("1.31")
	fake.PublishAMI(w.ec2, w.ssm, "al2023@latest", "1.31", epoch)
	w.ssm.FailNext("GetParameter", 1, fake.Throttling("GetParameter"))
	if _, err := w.p.List(t.Context(), nodeClass(awsv1.AMISelectorTerm{Alias: "al2023@latest"})); err == nil {
		t.Error("List succeeded with a partial answer while SSM was throttling")
	}
}

func TestUnsupportedAliasIsATypedError(t *testing.T) {
	w := newWorld("1.33")
	_, err := w.p.List(t.Context(), nodeClass(awsv1.AMISelectorTerm{Alias: "al2@latest"}))
	var unsupported *ami.UnsupportedAliasError
	if !errors.As(err, &unsupported) {
		t.Errorf("List = %v, want an UnsupportedAliasError", err)
	}
}

func TestANewReleaseIsSeenWhenTheParameterExpires(t *testing.T) {
	w := newWorld("1.31")
	first := fake.PublishAMI(w.ec2, w.ssm, "al2023@latest", "1.31", epoch.Add(-time.Hour))
	nc := nodeClass(awsv1.AMISelectorTerm{Alias: "al2023@latest"})
	std := "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id"
	has := func(amis []ami.AMI, id string) bool {
		for _, a := range amis {
			if a.ID == id {
				return true
			}
		}
		return false
	}
	if got := w.list(t, nc); !has(got, first[std]) {
		t.Fatalf("first release not resolved: %v", ids(got))
	}
	second := fake.PublishAMI(w.ec2, w.ssm, "al2023@latest", "1.31", epoch.Add(time.Hour))
	w.clock.Step(2 * time.Hour)
	if got := w.list(t, nc); !has(got, first[std]) {
		t.Errorf("two hours on: %v, want the cached parameter's first release", ids(got))
	}
	w.clock.Step(ami.AliasParameterTTL)
	if got := w.list(t, nc); !has(got, second[std]) {
		t.Errorf("a day on: %v, want the second release %s", ids(got), second[std])
	}
}

func TestAShorterAliasParameterTTL(t *testing.T) {
	w := newWorld("1.31")
	w.p.WithAliasParameterTTL(5 * time.Minute)
	first := fake.PublishAMI(w.ec2, w.ssm, "al2023@latest", "1.31", epoch.Add(-time.Hour))
	nc := nodeClass(awsv1.AMISelectorTerm{Alias: "al2023@latest"})
	std := "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id"
	if got := ids(w.list(t, nc)); !slicesContains(got, first[std]) {
		t.Fatalf("first release not resolved: %v", got)
	}
	second := fake.PublishAMI(w.ec2, w.ssm, "al2023@latest", "1.31", epoch)
	// Past the resolution refresh, within the parameter's five minutes.
	w.clock.Step(2 * time.Minute)
	if got := ids(w.list(t, nc)); !slicesContains(got, first[std]) {
		t.Errorf("two minutes on: %v, want the cached parameter's first release", got)
	}
	w.clock.Step(4 * time.Minute)
	if got := ids(w.list(t, nc)); !slicesContains(got, second[std]) || slicesContains(got, first[std]) {
		t.Errorf("six minutes on: %v, want the second release %s only", got, second[std])
	}
}

func TestInvalidateDeprecatedForgetsAPulledRelease(t *testing.T) {
	w := newWorld("1.31")
	first := fake.PublishAMI(w.ec2, w.ssm, "al2023@latest", "1.31", epoch.Add(-time.Hour))
	nc := nodeClass(awsv1.AMISelectorTerm{Alias: "al2023@latest"})
	w.list(t, nc)
	std := "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id"

	if forgot, err := w.p.InvalidateDeprecated(t.Context()); err != nil || len(forgot) != 0 {
		t.Fatalf("nothing deprecated: forgot %v, %v", forgot, err)
	}
	second := fake.PublishAMI(w.ec2, w.ssm, "al2023@latest", "1.31", epoch)
	w.ec2.DeprecateImage(first[std], epoch)
	forgot, err := w.p.InvalidateDeprecated(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{std}, forgot); diff != "" {
		t.Errorf("forgotten parameters (-want,+got)\n%s", diff)
	}
	got := w.list(t, nc)
	for _, a := range got {
		if a.ID == first[std] {
			t.Errorf("the deprecated %s is still resolved", a.ID)
		}
	}
	if !slicesContains(ids(got), second[std]) {
		t.Errorf("resolved %v, want the new release %s", ids(got), second[std])
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func image(id, name string, a ec2types.ArchitectureValues, created time.Time, tags map[string]string) ec2types.Image {
	return fake.NewImage(id, name, a, created, tags)
}

func TestTermsSelectTheNewestPerArchitecture(t *testing.T) {
	day := func(d int) time.Time { return epoch.AddDate(0, 0, -30+d) }
	amazon := image("ami-amazon", "eks-node-1", ec2types.ArchitectureValuesX8664, day(9), nil)
	amazon.OwnerId, amazon.ImageOwnerAlias = aws.String("602401143452"), aws.String("amazon")
	other := image("ami-other", "eks-node-2", ec2types.ArchitectureValuesX8664, day(9), nil)
	other.OwnerId = aws.String("999999999999")
	images := []ec2types.Image{
		image("ami-a1", "team-a-1", ec2types.ArchitectureValuesX8664, day(1), map[string]string{"team": "a"}),
		image("ami-a2", "team-a-2", ec2types.ArchitectureValuesX8664, day(2), map[string]string{"team": "a"}),
		image("ami-a3", "team-a-3", ec2types.ArchitectureValuesArm64, day(3), map[string]string{"team": "a"}),
		image("ami-mac", "team-a-mac", ec2types.ArchitectureValuesX8664Mac, day(4), map[string]string{"team": "a"}),
		image("ami-b1", "team-b-1", ec2types.ArchitectureValuesX8664, day(5), map[string]string{"team": "b", "stage": "prod"}),
		amazon, other,
	}
	for name, tc := range map[string]struct {
		terms []awsv1.AMISelectorTerm
		want  []string
	}{
		"tags: newest per architecture, unknown architectures dropped": {terms: []awsv1.AMISelectorTerm{{Tags: map[string]string{"team": "a"}}}, want: []string{"ami-a3", "ami-a2"}},
		"a wildcard tag value":            {terms: []awsv1.AMISelectorTerm{{Tags: map[string]string{"team": "*"}}}, want: []string{"ami-b1", "ami-a3"}},
		"tags within a term are ANDed":    {terms: []awsv1.AMISelectorTerm{{Tags: map[string]string{"team": "b", "stage": "dev"}}}, want: []string{}},
		"ids":                             {terms: []awsv1.AMISelectorTerm{{ID: "ami-a1"}}, want: []string{"ami-a1"}},
		"ids compete as one set":          {terms: []awsv1.AMISelectorTerm{{ID: "ami-a1"}, {ID: "ami-a2"}}, want: []string{"ami-a2"}},
		"a name searches self and amazon": {terms: []awsv1.AMISelectorTerm{{Name: "eks-node-*"}}, want: []string{"ami-amazon"}},
		"a name with an owner":            {terms: []awsv1.AMISelectorTerm{{Name: "eks-node-*", Owner: "999999999999"}}, want: []string{"ami-other"}},
		"tags with an owner":              {terms: []awsv1.AMISelectorTerm{{Tags: map[string]string{"team": "a"}, Owner: "amazon"}}, want: []string{}},
		"an unknown id matches nothing":   {terms: []awsv1.AMISelectorTerm{{ID: "ami-zzz"}}, want: []string{}},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld("1.31")
			w.ec2.AddImages(images...)
			got := w.list(t, nodeClass(tc.terms...))
			if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
				t.Errorf("(-want,+got)\n%s", diff)
			}
			for _, a := range got {
				if len(a.Requirements) != 1 || a.Requirements[0].Key != corev1.LabelArchStable {
					t.Errorf("%s: requirements %v, want only the architecture", a.ID, a.Requirements)
				}
			}
		})
	}
}

func TestDeprecatedImagesServeOnlyWhenNothingElseDoes(t *testing.T) {
	w := newWorld("1.31")
	w.ec2.AddImages(
		image("ami-old", "old", ec2types.ArchitectureValuesX8664, epoch.AddDate(0, 0, -10), map[string]string{"team": "a"}),
		image("ami-new", "new", ec2types.ArchitectureValuesX8664, epoch.AddDate(0, 0, -1), map[string]string{"team": "a"}),
	)
	w.ec2.DeprecateImage("ami-new", epoch.Add(-time.Minute))
	nc := nodeClass(awsv1.AMISelectorTerm{Tags: map[string]string{"team": "a"}})
	if got := ids(w.list(t, nc)); !cmp.Equal(got, []string{"ami-old"}) {
		t.Errorf("got %v, want the live ami-old over the newer deprecated image", got)
	}
	w.ec2.DeprecateImage("ami-old", epoch.Add(-time.Minute))
	nc.Generation++
	got := w.list(t, nc)
	if len(got) != 1 || got[0].ID != "ami-new" || !got[0].Deprecated {
		t.Errorf("got %+v, want the newest deprecated image, marked deprecated", got)
	}
}

func TestSSMParameterTerms(t *testing.T) {
	w := newWorld("1.31")
	w.ec2.AddImages(image("ami-custom", "custom", ec2types.ArchitectureValuesArm64, epoch, nil))
	w.ssm.PutParameter("/my/ami", "ami-custom")
	w.ssm.PutParameter("/my/not-an-ami", "hello")
	w.ec2.AddImages(image("ami-by-arn", "by-arn", ec2types.ArchitectureValuesX8664, epoch, nil))
	w.ssm.PutParameter("/my/other-ami", "ami-by-arn")
	got := w.list(t, nodeClass(
		awsv1.AMISelectorTerm{SSMParameter: "/my/ami"},
		awsv1.AMISelectorTerm{SSMParameter: "arn:aws:ssm:us-west-2:" + fake.AccountID + ":parameter/my/other-ami"},
		awsv1.AMISelectorTerm{SSMParameter: "/my/not-an-ami"},
		awsv1.AMISelectorTerm{SSMParameter: "/my/missing"},
	))
	if diff := cmp.Diff([]string{"ami-by-arn", "ami-custom"}, ids(got), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("(-want,+got)\n%s", diff)
	}
}

func TestListCachesPerGeneration(t *testing.T) {
	w := newWorld("1.31")
	w.ec2.AddImages(image("ami-1", "one", ec2types.ArchitectureValuesX8664, epoch.AddDate(0, 0, -2), map[string]string{"team": "a"}))
	nc := nodeClass(awsv1.AMISelectorTerm{Tags: map[string]string{"team": "a"}})
	w.list(t, nc)
	w.ec2.AddImages(image("ami-2", "two", ec2types.ArchitectureValuesX8664, epoch.AddDate(0, 0, -1), map[string]string{"team": "a"}))
	if got := ids(w.list(t, nc)); !cmp.Equal(got, []string{"ami-1"}) || w.ec2.Calls("DescribeImages") != 1 {
		t.Errorf("within the interval: %v after %d calls, want the cached ami-1 after 1", got, w.ec2.Calls("DescribeImages"))
	}
	w.clock.Step(ami.DefaultRefreshInterval + time.Second)
	if got := ids(w.list(t, nc)); !cmp.Equal(got, []string{"ami-2"}) {
		t.Errorf("after the interval: %v, want ami-2", got)
	}
}

func TestQueries(t *testing.T) {
	filter := func(name string, values ...string) ec2types.Filter {
		return ec2types.Filter{Name: aws.String(name), Values: values}
	}
	got := ami.Queries([]awsv1.AMISelectorTerm{
		{ID: "ami-2"},
		{Name: "eks-*"},
		{ID: "ami-1"},
		{Tags: map[string]string{"team": "a", "env": "*"}, Owner: "123456789012"},
	}, []string{"ami-from-ssm"})
	type query struct {
		Filters []ec2types.Filter
		Owners  []string
	}
	var gotQueries []query
	for _, in := range got {
		gotQueries = append(gotQueries, query{Filters: in.Filters, Owners: in.Owners})
	}
	want := []query{
		{Filters: []ec2types.Filter{filter("image-id", "ami-1", "ami-2", "ami-from-ssm")}},
		{Filters: []ec2types.Filter{filter("name", "eks-*")}, Owners: []string{"self", "amazon"}},
		{Filters: []ec2types.Filter{filter("tag-key", "env"), filter("tag:team", "a")}, Owners: []string{"123456789012"}},
	}
	if diff := cmp.Diff(want, gotQueries, cmpopts.IgnoreUnexported(ec2types.Filter{})); diff != "" {
		t.Errorf("(-want,+got)\n%s", diff)
	}
}

func TestResolveNamesTheTermsThatMatchedNothing(t *testing.T) {
	w := newWorld("1.31")
	w.ec2.AddImages(
		image("ami-found", "found", ec2types.ArchitectureValuesX8664, epoch, map[string]string{"team": "a"}),
		image("ami-ssm", "ssm", ec2types.ArchitectureValuesArm64, epoch, nil),
	)
	w.ssm.PutParameter("/my/ami", "ami-ssm")
	w.ssm.PutParameter("/my/gone", "ami-deregistered")
	for name, tc := range map[string]struct {
		terms []awsv1.AMISelectorTerm
		want  []int
	}{
		"each kind of term": {terms: []awsv1.AMISelectorTerm{
			{ID: "ami-found"},
			{ID: "ami-typo"},
			{SSMParameter: "/my/ami"},
			{SSMParameter: "/my/missing"},
			{SSMParameter: "/my/gone"},
			{Tags: map[string]string{"team": "a"}},
			{Tags: map[string]string{"team": "b"}},
			{Name: "nothing-*"},
		}, want: []int{1, 3, 4, 6, 7}},
		"only ssm parameters, none set": {terms: []awsv1.AMISelectorTerm{{SSMParameter: "/my/missing"}, {SSMParameter: "/my/other"}}, want: []int{0, 1}},
	} {
		t.Run(name, func(t *testing.T) {
			nc := nodeClass(tc.terms...)
			nc.UID = types.UID(name) // each case is its own NodeClass, not a cached one
			got, err := w.p.Resolve(t.Context(), nc)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Unmatched); diff != "" {
				t.Errorf("unmatched terms (-want,+got)\n%s", diff)
			}
		})
	}
}
