package ami_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami"
)

func arch(a string) []corev1.NodeSelectorRequirement {
	return []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{a}}}
}

func TestSelectKeepsTheBestImagePerRequirementSet(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2030, 1, d, 0, 0, 0, 0, time.UTC) }
	for name, tc := range map[string]struct {
		candidates []ami.AMI
		want       []string
	}{
		"the newest per architecture, newest first": {candidates: []ami.AMI{
			{ID: "ami-old-amd", CreationDate: day(1), Requirements: arch("amd64")},
			{ID: "ami-new-amd", CreationDate: day(3), Requirements: arch("amd64")},
			{ID: "ami-arm", CreationDate: day(2), Requirements: arch("arm64")},
		}, want: []string{"ami-new-amd", "ami-arm"}},
		"a deprecated image loses to an older live one": {candidates: []ami.AMI{
			{ID: "ami-live", CreationDate: day(1), Requirements: arch("amd64")},
			{ID: "ami-deprecated", CreationDate: day(5), Deprecated: true, Requirements: arch("amd64")},
		}, want: []string{"ami-live"}},
		"a deprecated image serves when nothing else does": {candidates: []ami.AMI{
			{ID: "ami-a", CreationDate: day(1), Deprecated: true, Requirements: arch("amd64")},
			{ID: "ami-b", CreationDate: day(2), Deprecated: true, Requirements: arch("amd64")},
		}, want: []string{"ami-b"}},
		"equal dates: the greater name": {candidates: []ami.AMI{
			{ID: "ami-1", Name: "node-b", CreationDate: day(1), Requirements: arch("amd64")},
			{ID: "ami-2", Name: "node-a", CreationDate: day(1), Requirements: arch("amd64")},
		}, want: []string{"ami-1"}},
		"equal dates across sets: by ID": {candidates: []ami.AMI{
			{ID: "ami-2", CreationDate: day(1), Requirements: arch("amd64")},
			{ID: "ami-1", CreationDate: day(1), Requirements: arch("arm64")},
		}, want: []string{"ami-1", "ami-2"}},
		"none": {candidates: nil, want: []string{}},
	} {
		t.Run(name, func(t *testing.T) {
			got := []string{}
			for _, a := range ami.Select(tc.candidates) {
				got = append(got, a.ID)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got)\n%s", diff)
			}
		})
	}
}

func TestSelectSortsRequirementsByKeyLengthThenKey(t *testing.T) {
	got := ami.Select([]ami.AMI{{ID: "ami-1", Requirements: []corev1.NodeSelectorRequirement{
		{Key: "karpenter.k8s.aws/instance-gpu-count", Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: "karpenter.k8s.aws/instance-accelerator-count", Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
	}}})
	var keys []string
	for _, r := range got[0].Requirements {
		keys = append(keys, r.Key)
	}
	want := []string{"kubernetes.io/arch", "karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-accelerator-count"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("(-want,+got)\n%s", diff)
	}
}
