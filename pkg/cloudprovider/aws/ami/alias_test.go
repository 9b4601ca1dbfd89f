package ami_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami"
)

func TestAliasParameters(t *testing.T) {
	std, nv, neu, win := ami.VariantStandard, ami.VariantNVIDIA, ami.VariantNeuron, ami.VariantWindows
	for name, tc := range map[string]struct {
		alias string
		k8s   string
		want  []ami.Parameter
	}{
		"al2023 latest": {alias: "al2023@latest", k8s: "1.31", want: []ami.Parameter{
			{Path: "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/image_id", Variants: []ami.Variant{std}},
			{Path: "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id", Variants: []ami.Variant{nv}},
			{Path: "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/neuron/recommended/image_id", Variants: []ami.Variant{neu}},
			{Path: "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/arm64/standard/recommended/image_id", Variants: []ami.Variant{std}},
			{Path: "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/arm64/nvidia/recommended/image_id", Variants: []ami.Variant{nv}},
		}},
		"al2023 pinned": {alias: "al2023@v20240807", k8s: "1.30", want: []ami.Parameter{
			{Path: "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.30-v20240807/image_id", Variants: []ami.Variant{std}},
			{Path: "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-1.30-v20240807/image_id", Variants: []ami.Variant{nv}},
			{Path: "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/neuron/amazon-eks-node-al2023-x86_64-neuron-1.30-v20240807/image_id", Variants: []ami.Variant{neu}},
			{Path: "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.30-v20240807/image_id", Variants: []ami.Variant{std}},
			{Path: "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-1.30-v20240807/image_id", Variants: []ami.Variant{nv}},
		}},
		"al2 latest": {alias: "al2@latest", k8s: "1.32", want: []ami.Parameter{
			{Path: "/aws/service/eks/optimized-ami/1.32/amazon-linux-2/recommended/image_id", Variants: []ami.Variant{std}},
			{Path: "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/recommended/image_id", Variants: []ami.Variant{std}},
			{Path: "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/recommended/image_id", Variants: []ami.Variant{nv, neu}},
		}},
		"al2 pinned": {alias: "al2@v20240807", k8s: "1.29", want: []ami.Parameter{
			{Path: "/aws/service/eks/optimized-ami/1.29/amazon-linux-2/amazon-eks-node-1.29-v20240807/image_id", Variants: []ami.Variant{std}},
			{Path: "/aws/service/eks/optimized-ami/1.29/amazon-linux-2-arm64/amazon-eks-arm64-node-1.29-v20240807/image_id", Variants: []ami.Variant{std}},
			{Path: "/aws/service/eks/optimized-ami/1.29/amazon-linux-2-gpu/amazon-eks-gpu-node-1.29-v20240807/image_id", Variants: []ami.Variant{nv, neu}},
		}},
		"bottlerocket latest": {alias: "bottlerocket@latest", k8s: "1.31", want: []ami.Parameter{
			{Path: "/aws/service/bottlerocket/aws-k8s-1.31/x86_64/latest/image_id", Variants: []ami.Variant{std, neu}},
			{Path: "/aws/service/bottlerocket/aws-k8s-1.31/arm64/latest/image_id", Variants: []ami.Variant{std}},
			{Path: "/aws/service/bottlerocket/aws-k8s-1.31-nvidia/x86_64/latest/image_id", Variants: []ami.Variant{nv}},
			{Path: "/aws/service/bottlerocket/aws-k8s-1.31-nvidia/arm64/latest/image_id", Variants: []ami.Variant{nv}},
		}},
		"bottlerocket pinned drops the v": {alias: "bottlerocket@v1.20.3", k8s: "1.31", want: []ami.Parameter{
			{Path: "/aws/service/bottlerocket/aws-k8s-1.31/x86_64/1.20.3/image_id", Variants: []ami.Variant{std, neu}},
			{Path: "/aws/service/bottlerocket/aws-k8s-1.31/arm64/1.20.3/image_id", Variants: []ami.Variant{std}},
			{Path: "/aws/service/bottlerocket/aws-k8s-1.31-nvidia/x86_64/1.20.3/image_id", Variants: []ami.Variant{nv}},
			{Path: "/aws/service/bottlerocket/aws-k8s-1.31-nvidia/arm64/1.20.3/image_id", Variants: []ami.Variant{nv}},
		}},
		"windows 2022": {alias: "windows2022@latest", k8s: "1.31", want: []ami.Parameter{
			{Path: "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.31/image_id", Variants: []ami.Variant{win}},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			alias, err := awsv1.ParseAlias(tc.alias)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ami.AliasParameters(alias, tc.k8s, minorOf(t, tc.k8s))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got)\n%s", diff)
			}
		})
	}
}

func TestAliasParametersRejectsAliasesTheVersionCannotUse(t *testing.T) {
	for name, tc := range map[string]struct {
		alias, k8s string
		wantErr    bool
	}{
		"al2 on 1.32":          {alias: "al2@latest", k8s: "1.32"},
		"al2 on 1.33":          {alias: "al2@latest", k8s: "1.33", wantErr: true},
		"windows2025 on 1.34":  {alias: "windows2025@latest", k8s: "1.34", wantErr: true},
		"windows2025 on 1.35":  {alias: "windows2025@latest", k8s: "1.35"},
		"al2023 on 1.36":       {alias: "al2023@latest", k8s: "1.36"},
		"bottlerocket on 1.36": {alias: "bottlerocket@latest", k8s: "1.36"},
	} {
		t.Run(name, func(t *testing.T) {
			alias, err := awsv1.ParseAlias(tc.alias)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ami.AliasParameters(alias, tc.k8s, minorOf(t, tc.k8s))
			var unsupported *ami.UnsupportedAliasError
			if got := errors.As(err, &unsupported); got != tc.wantErr {
				t.Errorf("UnsupportedAliasError = %v (%v), want %v", got, err, tc.wantErr)
			}
		})
	}
}
