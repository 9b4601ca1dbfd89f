package aws

import (
	"context"
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/placementgroup"
)

// PlacementGroupDrift: the NodeClaim's placement-group-id label is not the
// group the EC2NodeClass resolves to now (a selector added, removed or
// changed, or the group recreated under the same name), upstream's reason.
const PlacementGroupDrift cloudprovider.DriftReason = "PlacementGroupDrift"

// placeLaunched records where a just-launched instance was placed: the
// EC2NodeClass's placement group, and in a partition group the partition
// the NodeClaim pinned or, when EC2 chose, the one DescribeInstances
// reports (upstream blocks registration until it knows; here a partition
// EC2 does not report yet leaves the label off).
func (c *CloudProvider) placeLaunched(ctx context.Context, nodeClass *awsv1.EC2NodeClass, nodeClaim *karpv1.NodeClaim, inst *instance.Instance) {
	group := nodeClass.Status.PlacementGroup
	if group == nil || inst.PlacementGroupID != "" {
		return
	}
	inst.PlacementGroupID = group.ID
	if group.Strategy != awsv1.PlacementGroupStrategyPartition {
		return
	}
	if n := placementgroup.Partition(group, cloudprovider.NodeClaimRequirements(nodeClaim)); n > 0 {
		inst.PlacementPartition = n
		return
	}
	described, err := c.instances.Get(ctx, inst.ID)
	if err != nil || described.PlacementPartition == 0 {
		log.FromContext(ctx).V(1).Info("partition of the launched instance is not known yet", "instance", inst.ID, "placementGroup", group.ID, "error", err)
		return
	}
	inst.PlacementPartition = described.PlacementPartition
}

// placementLabels set the labels of the instance's tenancy and placement
// group from the instance itself: NodeClaim requirements may allow both
// tenancies, and the instance type lists every partition.
func placementLabels(labels map[string]string, inst *instance.Instance) {
	if inst.Tenancy != "" {
		labels[awsv1.LabelInstanceTenancy] = inst.Tenancy
	}
	delete(labels, awsv1.LabelPlacementGroupID)
	delete(labels, awsv1.LabelPlacementGroupPartition)
	if inst.PlacementGroupID == "" {
		return
	}
	labels[awsv1.LabelPlacementGroupID] = inst.PlacementGroupID
	if inst.PlacementPartition > 0 {
		labels[awsv1.LabelPlacementGroupPartition] = strconv.Itoa(int(inst.PlacementPartition))
	}
}

// placementGroupDrift compares the placement group the NodeClaim was
// labelled with at launch with the one the EC2NodeClass resolves to now
// ("" for none on either side).
func placementGroupDrift(nodeClaim *karpv1.NodeClaim, nodeClass *awsv1.EC2NodeClass) cloudprovider.DriftReason {
	want := ""
	if g := nodeClass.Status.PlacementGroup; g != nil {
		want = g.ID
	}
	if nodeClaim.Labels[awsv1.LabelPlacementGroupID] != want {
		return PlacementGroupDrift
	}
	return ""
}
