package ami

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// Variant is a flavour of an EKS-optimized AMI, for one kind of instance.
type Variant string

const (
	// VariantStandard serves instance types without GPUs or accelerators.
	VariantStandard Variant = "standard"
	// VariantNVIDIA serves instance types with GPUs.
	VariantNVIDIA Variant = "nvidia"
	// VariantNeuron serves instance types with AWS Neuron accelerators.
	VariantNeuron Variant = "neuron"
	// VariantWindows serves Windows instance types.
	VariantWindows Variant = "windows"
)

// Parameter is one SSM parameter an alias reads, and the variants the AMI
// it names serves.
type Parameter struct {
	Path     string
	Variants []Variant
}

// UnsupportedAliasError is an alias that cannot be used with the cluster's
// Kubernetes version: AL2 from 1.33 on (no AMIs are published), Windows
// Server 2025 before 1.35.
type UnsupportedAliasError struct {
	Alias   string
	Version string
	Reason  string
}

func (e *UnsupportedAliasError) Error() string {
	return fmt.Sprintf("alias %s is not supported on Kubernetes %s: %s", e.Alias, e.Version, e.Reason)
}

// AliasParameters returns the SSM parameters alias reads for Kubernetes
// version k8s ("major.minor"). The paths are those AWS publishes the
// EKS-optimized AMIs under.
func AliasParameters(alias awsv1.Alias, k8s string, minor int) ([]Parameter, error) {
	switch alias.Family {
	case awsv1.AMIFamilyAL2:
		if minor >= 33 {
			return nil, &UnsupportedAliasError{Alias: alias.String(), Version: k8s, Reason: "Amazon Linux 2 AMIs are not published for Kubernetes 1.33 and later; use al2023@" + alias.Version}
		}
		return al2(alias.Version, k8s), nil
	case awsv1.AMIFamilyAL2023:
		return al2023(alias.Version, k8s), nil
	case awsv1.AMIFamilyBottlerocket:
		return bottlerocket(alias.Version, k8s), nil
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		if alias.Family == awsv1.AMIFamilyWindows2025 && minor < 35 {
			return nil, &UnsupportedAliasError{Alias: alias.String(), Version: k8s, Reason: "Windows Server 2025 AMIs are published from Kubernetes 1.35 on"}
		}
		year := strings.TrimPrefix(alias.Family, "Windows")
		return []Parameter{{
			Path:     fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", year, k8s),
			Variants: []Variant{VariantWindows},
		}}, nil
	}
	return nil, fmt.Errorf("alias %s: family %q has no published AMIs", alias, alias.Family)
}

func al2(version, k8s string) []Parameter {
	base := "/aws/service/eks/optimized-ami/" + k8s
	name := func(dir, pinned string) string {
		if version == awsv1.AliasVersionLatest {
			return fmt.Sprintf("%s/%s/recommended/image_id", base, dir)
		}
		return fmt.Sprintf("%s/%s/%s-%s-%s/image_id", base, dir, pinned, k8s, version)
	}
	return []Parameter{
		{Path: name("amazon-linux-2", "amazon-eks-node"), Variants: []Variant{VariantStandard}},
		{Path: name("amazon-linux-2-arm64", "amazon-eks-arm64-node"), Variants: []Variant{VariantStandard}},
		{Path: name("amazon-linux-2-gpu", "amazon-eks-gpu-node"), Variants: []Variant{VariantNVIDIA, VariantNeuron}},
	}
}

func al2023(version, k8s string) []Parameter {
	var out []Parameter
	for _, v := range []struct {
		arch    string
		variant Variant
	}{
		{"x86_64", VariantStandard}, {"x86_64", VariantNVIDIA}, {"x86_64", VariantNeuron},
		{"arm64", VariantStandard}, {"arm64", VariantNVIDIA},
	} {
		dir := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s", k8s, v.arch, v.variant)
		last := "recommended"
		if version != awsv1.AliasVersionLatest {
			last = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", v.arch, v.variant, k8s, version)
		}
		out = append(out, Parameter{Path: dir + "/" + last + "/image_id", Variants: []Variant{v.variant}})
	}
	return out
}

func bottlerocket(version, k8s string) []Parameter {
	release := "latest"
	if version != awsv1.AliasVersionLatest {
		release = strings.TrimPrefix(version, "v")
	}
	path := func(flavour, arch string) string {
		return fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id", k8s, flavour, arch, release)
	}
	return []Parameter{
		{Path: path("", "x86_64"), Variants: []Variant{VariantStandard, VariantNeuron}},
		{Path: path("", "arm64"), Variants: []Variant{VariantStandard}},
		{Path: path("-nvidia", "x86_64"), Variants: []Variant{VariantNVIDIA}},
		{Path: path("-nvidia", "arm64"), Variants: []Variant{VariantNVIDIA}},
	}
}

// windowsBuilds is the node.kubernetes.io/windows-build of each Windows family.
var windowsBuilds = map[string]string{
	awsv1.AMIFamilyWindows2019: "10.0.17763",
	awsv1.AMIFamilyWindows2022: "10.0.20348",
	awsv1.AMIFamilyWindows2025: "10.0.26100",
}

// variantRequirements are the instance-type requirements, beyond the
// architecture, of an AMI of variant v in family.
func variantRequirements(family string, v Variant) []corev1.NodeSelectorRequirement {
	switch v {
	case VariantStandard:
		return []corev1.NodeSelectorRequirement{
			{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
			{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		}
	case VariantNVIDIA:
		return []corev1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}}
	case VariantNeuron:
		return []corev1.NodeSelectorRequirement{{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists}}
	case VariantWindows:
		return []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{string(corev1.Windows)}},
			{Key: awsv1.LabelWindowsBuild, Operator: corev1.NodeSelectorOpIn, Values: []string{windowsBuilds[family]}},
		}
	}
	return nil
}
