package nodeclass

import (
	"context"
	"fmt"
	"slices"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// fallbackTypes are the dry runs' types, one per architecture, when no
// NodePool of the class can launch a type (or none uses it), as upstream.
var fallbackTypes = []string{"m5.large", "m6g.large"}

// launchShape is what the dry runs launch: the NodeClaim (its tenancy)
// and the one instance type.
type launchShape struct {
	nodeClaim    *karpv1.NodeClaim
	instanceType *cloudprovider.InstanceType
}

// shape picks the dry runs' instance type much as upstream does: a type a
// NodePool of the class can launch and one of its AMIs takes (m5.large or
// m6g.large when they qualify); else m5.large or m6g.large, else any type
// an AMI takes. The NodeClaim asks
// for dedicated tenancy when a NodePool of the class allows it.
func (d *DryRun) shape(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (launchShape, error) {
	nodeClaim := &karpv1.NodeClaim{Spec: karpv1.NodeClaimSpec{NodeClassRef: &karpv1.NodeClassReference{
		Group: awsv1.Group, Kind: awsv1.Kind, Name: nodeClass.Name,
	}}}
	types, err := d.types.List(ctx, nodeClass)
	if err != nil {
		return launchShape{}, fmt.Errorf("listing instance types for the dry runs: %w", err)
	}
	pools, dedicated, err := d.nodePools(ctx, nodeClass)
	if err != nil {
		return launchShape{}, err
	}
	if dedicated {
		nodeClaim.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{
			Key: awsv1.LabelInstanceTenancy, Operator: corev1.NodeSelectorOpIn, Values: []string{string(ec2types.TenancyDedicated)},
		}}
	}
	compatible := slices.DeleteFunc(slices.Clone(types), func(it *cloudprovider.InstanceType) bool {
		return !slices.ContainsFunc(pools, func(reqs scheduling.Requirements) bool { return it.Requirements.Intersects(reqs) == nil })
	})
	// m5.large and m6g.large first when a NodePool takes them: they
	// launch with the standard AMI, which upstream prefers.
	it := firstWithAMI(fallbackFirst(compatible), nodeClass.Status.AMIs)
	if it == nil || nodeClass.AMIFamily() == awsv1.AMIFamilyWindows2019 || nodeClass.AMIFamily() == awsv1.AMIFamilyWindows2022 ||
		nodeClass.AMIFamily() == awsv1.AMIFamilyWindows2025 {
		// Windows falls back too: its types' compatibility is unreliable
		// (as upstream).
		it = firstWithAMI(fallbackFirst(types), nodeClass.Status.AMIs)
	}
	if it == nil {
		return launchShape{}, fmt.Errorf("no instance type has an AMI of the %s to dry-run a launch with", awsv1.Kind)
	}
	return launchShape{nodeClaim: nodeClaim, instanceType: it}, nil
}

// nodePools are the requirements (and template labels) of each NodePool
// using the class, and whether one allows dedicated tenancy.
func (d *DryRun) nodePools(ctx context.Context, nodeClass *awsv1.EC2NodeClass) ([]scheduling.Requirements, bool, error) {
	if d.kubeClient == nil {
		return nil, false, nil
	}
	list := &karpv1.NodePoolList{}
	if err := d.kubeClient.List(ctx, list); err != nil {
		return nil, false, fmt.Errorf("listing nodepools for the dry runs: %w", err)
	}
	var out []scheduling.Requirements
	dedicated := false
	for i := range list.Items {
		np := &list.Items[i]
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil || ref.Name != nodeClass.Name || ref.Kind != awsv1.Kind || ref.Group != awsv1.Group {
			continue
		}
		reqs := scheduling.Requirements{}
		for _, r := range np.Spec.Template.Spec.Requirements {
			reqs.Add(scheduling.NewRequirement(scheduling.NormalizeKey(r.Key), r.Operator, r.Values...))
		}
		if t := reqs.Get(awsv1.LabelInstanceTenancy); t != nil && t.Has(string(ec2types.TenancyDedicated)) {
			dedicated = true
		}
		for k, v := range np.Spec.Template.ObjectMeta.Labels {
			reqs.Add(scheduling.NewRequirement(k, corev1.NodeSelectorOpIn, v))
		}
		out = append(out, reqs)
	}
	return out, dedicated, nil
}

// fallbackFirst is types with m5.large and m6g.large first.
func fallbackFirst(types []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	rank := func(name string) int {
		if i := slices.Index(fallbackTypes, name); i >= 0 {
			return i
		}
		return len(fallbackTypes)
	}
	ordered := slices.Clone(types)
	slices.SortStableFunc(ordered, func(a, b *cloudprovider.InstanceType) int { return rank(a.Name) - rank(b.Name) })
	return ordered
}

func firstWithAMI(types []*cloudprovider.InstanceType, amis []awsv1.AMI) *cloudprovider.InstanceType {
	for _, it := range types {
		if _, ok := launchtemplate.AMIFor(amis, it); ok {
			return it
		}
	}
	return nil
}
