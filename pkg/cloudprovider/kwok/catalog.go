package kwok

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/catalog"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// AWS label keys the EC2 catalog carries; the kwok instance labels are
// derived from them when present.
const (
	awsInstanceFamilyLabelKey = "karpenter.k8s.aws/instance-family"
	awsInstanceSizeLabelKey   = "karpenter.k8s.aws/instance-size"
	awsInstanceCPULabelKey    = "karpenter.k8s.aws/instance-cpu"
	awsInstanceMemoryLabelKey = "karpenter.k8s.aws/instance-memory"
)

// LoadInstanceTypes reads a catalog file ("" means the embedded EC2
// catalog) and returns its instance types with offerings in zones (see
// pkg/catalog for the spot price model) and the kwok instance labels.
func LoadInstanceTypes(path string, zones []string) ([]*cloudprovider.InstanceType, error) {
	data := instancetypes.EC2
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("reading instance types: %w", err)
		}
	}
	return ParseInstanceTypes(data, zones)
}

// ParseInstanceTypes is LoadInstanceTypes on catalog bytes.
func ParseInstanceTypes(data []byte, zones []string) ([]*cloudprovider.InstanceType, error) {
	opts := catalog.DefaultOptions()
	if len(zones) > 0 {
		opts.Zones = zones
	}
	types, err := catalog.Parse(data, opts)
	if err != nil {
		return nil, fmt.Errorf("parsing instance types: %w", err)
	}
	var header struct {
		Region string `json:"region"`
	}
	if err := json.Unmarshal(data, &header); err != nil {
		return nil, fmt.Errorf("parsing instance types: %w", err)
	}
	region := regionOf(header.Region, opts.Zones)
	for _, it := range types {
		addKWOKLabels(it, region)
	}
	return types, nil
}

// regionOf returns the catalog's region when every zone lies in it (zone
// names extend their region's name, as in us-east-1a), else "".
func regionOf(region string, zones []string) string {
	if region == "" {
		return ""
	}
	for _, z := range zones {
		if !strings.HasPrefix(z, region) {
			return ""
		}
	}
	return region
}

// addKWOKLabels defines the karpenter.kwok.sh instance labels (and the
// region) on a type that does not define them yet.
func addKWOKLabels(it *cloudprovider.InstanceType, region string) {
	labels := it.Requirements.Labels()
	family, size, _ := strings.Cut(it.Name, ".")
	derived := map[string]string{
		kwokv1alpha1.InstanceFamilyLabelKey: firstNonEmpty(labels[awsInstanceFamilyLabelKey], family),
		kwokv1alpha1.InstanceSizeLabelKey:   firstNonEmpty(labels[awsInstanceSizeLabelKey], size, cpuLabel(it)),
		kwokv1alpha1.InstanceCPULabelKey:    firstNonEmpty(labels[awsInstanceCPULabelKey], cpuLabel(it)),
		kwokv1alpha1.InstanceMemoryLabelKey: memoryLabel(labels[awsInstanceMemoryLabelKey], it),
	}
	if region != "" {
		derived[corev1.LabelTopologyRegion] = region
	}
	for key, value := range derived {
		if _, ok := it.Requirements[key]; ok || value == "" {
			continue
		}
		it.Requirements[key] = scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, value)
	}
}

func cpuLabel(it *cloudprovider.InstanceType) string {
	return strconv.FormatInt(it.Capacity.Cpu().Value(), 10)
}

// memoryLabel renders memory as "<n>Gi" when it is a whole number of GiB,
// else "<n>Mi", from the AWS label (MiB) or the capacity.
func memoryLabel(awsMiB string, it *cloudprovider.InstanceType) string {
	mib, err := strconv.ParseInt(awsMiB, 10, 64)
	if err != nil {
		mib = it.Capacity.Memory().Value() / (1 << 20)
	}
	if mib <= 0 {
		return ""
	}
	if mib%1024 == 0 {
		return strconv.FormatInt(mib/1024, 10) + "Gi"
	}
	return strconv.FormatInt(mib, 10) + "Mi"
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
