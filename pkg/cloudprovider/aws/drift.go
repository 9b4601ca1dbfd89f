package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
)

// Drift reasons of the AWS provider (upstream's names). NodeClassDrift,
// the EC2NodeClass spec hash, is cloudprovider.NodeClassDrift.
const (
	// AMIDrift: the instance runs an image the EC2NodeClass would no longer
	// launch its instance type with (a newer release was published in SSM,
	// the cluster's Kubernetes version moved the alias to another SSM path,
	// or the AMI selector terms changed).
	AMIDrift cloudprovider.DriftReason = "AMIDrift"
	// SecurityGroupDrift: the instance's security groups are not exactly
	// the EC2NodeClass's resolved ones.
	SecurityGroupDrift cloudprovider.DriftReason = "SecurityGroupDrift"
	// SubnetDrift: the instance's subnet is not among the EC2NodeClass's
	// resolved subnets.
	SubnetDrift cloudprovider.DriftReason = "SubnetDrift"
	// CapacityReservationDrift: the instance runs in a capacity reservation
	// the EC2NodeClass no longer selects.
	CapacityReservationDrift cloudprovider.DriftReason = "CapacityReservationDrift"
)

// IsDrifted reports why the NodeClaim no longer matches its EC2NodeClass,
// or "" when it still does. Checks, first hit wins (upstream's order):
//
//  1. NodeClassDrift: the spec hash recorded at launch (same hash version)
//     differs from the EC2NodeClass's.
//  2. AMIDrift: the image is not the one status.amis maps the NodeClaim's
//     instance type to (the image a launch would use now).
//  3. SecurityGroupDrift, 4. SubnetDrift, 5. CapacityReservationDrift:
//     the instance, as DescribeInstances shows it, against the status.
//  6. PlacementGroupDrift: the NodeClaim's placement-group-id label against
//     status.placementGroup.
//
// There is no verdict while the EC2NodeClass is missing, terminating or
// not Ready: its status may be empty or partial, and a replacement could
// not launch anyway. Between a spec change and the status controller
// resolving it, the dynamic checks read the status resolved before, so a
// verdict does not flicker off and on with every edit. A NodeClaim whose
// instance is gone is not drifted either (garbage collection and the
// lifecycle controller deal with it).
func (c *CloudProvider) IsDrifted(ctx context.Context, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	ref := nodeClaim.Spec.NodeClassRef
	if ref == nil || ref.Group != awsv1.Group || ref.Kind != awsv1.Kind {
		return "", nil
	}
	nodeClass, err := c.nodeClass(ctx, ref.Name)
	if err != nil || nodeClass == nil {
		return "", err
	}
	ready := nodeClass.StatusConditions().Get(awsv1.ConditionTypeReady)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		return "", nil
	}
	// 1. Static fields first: no API call needed.
	if nodeClassDrifted(nodeClaim, nodeClass) {
		return cloudprovider.NodeClassDrift, nil
	}
	// 2. The image, from the NodeClaim's status (the instance's as a
	// fallback for NodeClaims hydrated without one).
	inst, err := c.driftInstances.get(ctx, nodeClaim.Status.ProviderID)
	if cloudprovider.IsNodeClaimNotFoundError(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	imageID := nodeClaim.Status.ImageID
	if imageID == "" {
		imageID = inst.ImageID
	}
	if reason, err := c.amiDrift(ctx, nodeClass, nodeClaim.Labels[corev1.LabelInstanceTypeStable], imageID); err != nil || reason != "" {
		return reason, err
	}
	// 3-5. The instance's network and reservation.
	if reason, err := networkDrift(inst, nodeClass); err != nil || reason != "" {
		return reason, err
	}
	if reason, err := c.capacityReservationDrift(ctx, inst, nodeClass); err != nil || reason != "" {
		return reason, err
	}
	// 6. The placement group the NodeClaim was labelled with.
	return placementGroupDrift(nodeClaim, nodeClass), nil
}

// nodeClassDrifted compares the spec hash recorded at launch with the
// EC2NodeClass's, only when both are of the current hash version (an older
// version's hash is migrated, never compared).
func nodeClassDrifted(nodeClaim *karpv1.NodeClaim, nodeClass *awsv1.EC2NodeClass) bool {
	hash, ok := nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHash]
	if !ok || nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != awsv1.EC2NodeClassHashVersion {
		return false
	}
	return hash != nodeClass.Hash()
}

// amiDrift maps the instance type against status.amis exactly as a launch
// does (the first, newest, AMI whose requirements the type satisfies) and
// reports AMIDrift when the node's image is not that AMI. Other AMIs in the
// status (for other architectures or variants, or older ones the type
// would not get) do not keep a node from drifting, nor make it drift. An
// instance type the EC2NodeClass no longer lists has no AMI verdict: the
// core reports it as InstanceTypeNotFound.
func (c *CloudProvider) amiDrift(ctx context.Context, nodeClass *awsv1.EC2NodeClass, instanceType, imageID string) (cloudprovider.DriftReason, error) {
	if instanceType == "" || imageID == "" || len(nodeClass.Status.AMIs) == 0 {
		return "", nil
	}
	types, err := c.instanceTypes.List(ctx, nodeClass)
	if err != nil {
		return "", fmt.Errorf("listing instance types for ami drift: %w", err)
	}
	i := slices.IndexFunc(types, func(it *cloudprovider.InstanceType) bool { return it.Name == instanceType })
	if i < 0 {
		return "", nil
	}
	ami, ok := launchtemplate.AMIFor(nodeClass.Status.AMIs, types[i])
	if !ok || ami.ID != imageID {
		return AMIDrift, nil
	}
	return "", nil
}

// networkDrift reports SecurityGroupDrift when the instance's groups are
// not exactly status.securityGroups, then SubnetDrift when its subnet is
// not among status.subnets.
func networkDrift(inst *instance.Instance, nodeClass *awsv1.EC2NodeClass) (cloudprovider.DriftReason, error) {
	if len(nodeClass.Status.SecurityGroups) == 0 {
		return "", errors.New("checking security group drift: no security groups in the EC2NodeClass status")
	}
	if len(nodeClass.Status.Subnets) == 0 {
		return "", errors.New("checking subnet drift: no subnets in the EC2NodeClass status")
	}
	want := make([]string, 0, len(nodeClass.Status.SecurityGroups))
	for _, g := range nodeClass.Status.SecurityGroups {
		want = append(want, g.ID)
	}
	if !slices.Equal(sortedSet(want), sortedSet(inst.SecurityGroupIDs)) {
		return SecurityGroupDrift, nil
	}
	if !slices.ContainsFunc(nodeClass.Status.Subnets, func(s awsv1.Subnet) bool { return s.ID == inst.SubnetID }) {
		return SubnetDrift, nil
	}
	return "", nil
}

// capacityReservationDrift reports an instance running in a reservation
// the EC2NodeClass no longer selects. The answer is confirmed with a fresh
// DescribeInstances: an instance whose reservation ended runs on as
// on-demand, outside any reservation, and is not drifted.
func (c *CloudProvider) capacityReservationDrift(ctx context.Context, inst *instance.Instance, nodeClass *awsv1.EC2NodeClass) (cloudprovider.DriftReason, error) {
	selected := func(id string) bool {
		return id == "" || slices.ContainsFunc(nodeClass.Status.CapacityReservations, func(r awsv1.CapacityReservation) bool { return r.ID == id })
	}
	if selected(inst.ReservationID) {
		return "", nil
	}
	fresh, err := c.instances.Get(ctx, inst.ID)
	if cloudprovider.IsNodeClaimNotFoundError(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("checking capacity reservation drift: %w", err)
	}
	c.driftInstances.put(fresh)
	if selected(fresh.ReservationID) {
		return "", nil
	}
	return CapacityReservationDrift, nil
}

func sortedSet(ids []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(ids)))
}
