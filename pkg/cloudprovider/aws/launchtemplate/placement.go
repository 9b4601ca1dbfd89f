package launchtemplate

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/placementgroup"
)

// Tenancy is the tenancy a NodeClaim launches with (upstream's rule):
// default when its karpenter.k8s.aws/instance-tenancy requirement allows it
// or there is none, else dedicated when allowed. Dedicated instances run on
// hardware no other account shares and cost more, so they are never chosen
// unless the NodeClaim asks for nothing else.
func Tenancy(nodeClaim *karpv1.NodeClaim) ec2types.Tenancy {
	req := cloudprovider.NodeClaimRequirements(nodeClaim).Get(awsv1.LabelInstanceTenancy)
	if req == nil {
		return ec2types.TenancyDefault
	}
	for _, t := range []ec2types.Tenancy{ec2types.TenancyDefault, ec2types.TenancyDedicated} {
		if req.Has(string(t)) {
			return t
		}
	}
	return ec2types.TenancyDefault
}

// placement is the launch template's Placement, as upstream renders it:
// the tenancy always, the class's resolved placement group, and the
// partition the NodeClaim pins in a partition group (EC2 picks one
// otherwise).
func placement(nodeClass *awsv1.EC2NodeClass, nodeClaim *karpv1.NodeClaim) *ec2types.LaunchTemplatePlacementRequest {
	out := &ec2types.LaunchTemplatePlacementRequest{Tenancy: Tenancy(nodeClaim)}
	group := nodeClass.Status.PlacementGroup
	if group == nil {
		return out
	}
	out.GroupId = aws.String(group.ID)
	if n := placementgroup.Partition(group, cloudprovider.NodeClaimRequirements(nodeClaim)); n > 0 {
		out.PartitionNumber = aws.Int32(n)
	}
	return out
}
