package aws

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// Name is the provider's name.
const Name = "aws"

// Launched condition reasons of the AWS provider's CreateErrors.
const (
	// ReasonNodeClassNotSupported: the NodeClaim's nodeClassRef is not an
	// EC2NodeClass.
	ReasonNodeClassNotSupported = "NodeClassNotSupported"
	// ReasonNodeClassReadinessUnknown: the EC2NodeClass's Ready is Unknown.
	ReasonNodeClassReadinessUnknown = "NodeClassReadinessUnknown"
	// ReasonInstanceTypeResolutionFailed: the instance types could not be
	// listed.
	ReasonInstanceTypeResolutionFailed = "InstanceTypeResolutionFailed"
	// ReasonLaunchTemplateResolutionFailed: the launch templates could not
	// be made.
	ReasonLaunchTemplateResolutionFailed = "LaunchTemplateResolutionFailed"
	// ReasonSubnetResolutionFailed: the EC2NodeClass has no subnet in any
	// zone the NodeClaim can launch in.
	ReasonSubnetResolutionFailed = "SubnetResolutionFailed"
)

// maxInstanceTypes caps the instance types one launch offers CreateFleet,
// the cheapest first (upstream's limit).
const maxInstanceTypes = 60

// instanceTypeProvider lists the instance types an EC2NodeClass can launch.
type instanceTypeProvider interface {
	List(ctx context.Context, nodeClass *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error)
}

// offeringMarker remembers offerings refused for capacity.
type offeringMarker interface {
	MarkUnavailable(ctx context.Context, reason, instanceType, zone, capacityType string)
}

var (
	_ cloudprovider.CloudProvider        = (*CloudProvider)(nil)
	_ cloudprovider.InstanceTypeLauncher = (*CloudProvider)(nil)
)

// CloudProvider launches NodeClaims as EC2 instances.
type CloudProvider struct {
	kubeClient      client.Client
	clock           clock.PassiveClock
	clusterName     string
	instanceTypes   instanceTypeProvider
	instances       *instance.Provider
	launchTemplates *launchtemplate.Provider
	unavailable     offeringMarker
	subnets         subnetPicker
	reservations    reservationTracker
	candidates      candidateCache
	// driftInstances answers drift checks from one listing of the
	// cluster's instances.
	driftInstances *instanceSnapshot
}

// reservationTracker keeps the instances left in capacity reservations
// (package capacityreservation's Provider).
type reservationTracker interface {
	MarkLaunched(id string, launchedAt time.Time)
	MarkTerminated(id string)
	MarkUnavailable(ids ...string)
}

// WithReservations makes launches into capacity reservations count down
// the reservation's available instances, and a full one unavailable.
func (c *CloudProvider) WithReservations(reservations reservationTracker) *CloudProvider {
	c.reservations = reservations
	return c
}

// subnetPicker chooses each zone's subnet for a launch by free addresses
// (package subnet's Provider).
type subnetPicker interface {
	ZonalSubnetsForLaunch(nodeClass *awsv1.EC2NodeClass, predictedIPs int32, skip func(subnetID string) bool) map[string]awsv1.Subnet
	ReleaseIPs(subnetIDs []string, ips int32)
}

// WithSubnets makes launches pick each zone's subnet with the most free
// addresses (less those in-flight launches are predicted to take) instead
// of the first of the zone in the EC2NodeClass status.
func (c *CloudProvider) WithSubnets(subnets subnetPicker) *CloudProvider {
	c.subnets = subnets
	return c
}

// New assembles the provider from its parts. unavailable may be nil.
func New(kubeClient client.Client, clk clock.PassiveClock, clusterName string, instanceTypes instanceTypeProvider, instances *instance.Provider,
	launchTemplates *launchtemplate.Provider, unavailable offeringMarker) *CloudProvider {
	return &CloudProvider{
		kubeClient:      kubeClient,
		clock:           clk,
		clusterName:     clusterName,
		instanceTypes:   instanceTypes,
		instances:       instances,
		launchTemplates: launchTemplates,
		unavailable:     unavailable,
		driftInstances:  newInstanceSnapshot(instances, clk, DriftInstancesTTL),
	}
}

// Name is "aws".
func (c *CloudProvider) Name() string { return Name }

// GetSupportedNodeClasses returns EC2NodeClass.
func (c *CloudProvider) GetSupportedNodeClasses() []cloudprovider.NodeClass {
	return []cloudprovider.NodeClass{&awsv1.EC2NodeClass{}}
}

// RepairPolicies are upstream's: a node not Ready for 30 minutes, and the
// conditions of the EKS node monitoring agent.
func (c *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	return []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 30 * time.Minute},
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute},
		{ConditionType: "StorageReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "NetworkingReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "KernelReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "ContainerRuntimeReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
	}
}

// MarkOfferingUnavailable puts an interrupted offering into the
// unavailable-offerings cache (the interruption controller calls it).
func (c *CloudProvider) MarkOfferingUnavailable(ctx context.Context, key cloudprovider.OfferingKey) {
	if c.unavailable != nil {
		c.unavailable.MarkUnavailable(ctx, "SpotInterruption", key.InstanceType, key.Zone, key.CapacityType)
	}
}

// GetInstanceTypes returns the instance types of the NodePool's
// EC2NodeClass; none when it does not exist or is being deleted.
func (c *CloudProvider) GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	ref := nodePool.Spec.Template.Spec.NodeClassRef
	if ref == nil || ref.Group != awsv1.Group || ref.Kind != awsv1.Kind {
		return nil, nil
	}
	nodeClass, err := c.nodeClass(ctx, ref.Name)
	if err != nil || nodeClass == nil {
		return nil, err
	}
	return c.instanceTypes.List(ctx, nodeClass)
}

// nodeClass returns the named EC2NodeClass, nil when it does not exist or
// is being deleted (upstream treats both as not found).
func (c *CloudProvider) nodeClass(ctx context.Context, name string) (*awsv1.EC2NodeClass, error) {
	nodeClass := &awsv1.EC2NodeClass{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: name}, nodeClass); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting EC2NodeClass %s: %w", name, err)
	}
	if !nodeClass.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return nodeClass, nil
}

// readyNodeClass resolves a NodeClaim's EC2NodeClass for launching.
func (c *CloudProvider) readyNodeClass(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*awsv1.EC2NodeClass, error) {
	ref := nodeClaim.Spec.NodeClassRef
	if ref == nil || ref.Group != awsv1.Group || ref.Kind != awsv1.Kind {
		err := fmt.Errorf("nodeClassRef %v is not an %s", ref, awsv1.Kind)
		return nil, cloudprovider.NewCreateError(err, ReasonNodeClassNotSupported, err.Error())
	}
	nodeClass, err := c.nodeClass(ctx, ref.Name)
	if err != nil {
		return nil, err
	}
	if nodeClass == nil {
		// As upstream: a missing NodeClass launches nothing, like a cloud
		// without capacity, so the NodeClaim is replaced.
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("resolving %s %s: not found or terminating", awsv1.Kind, ref.Name))
	}
	ready := nodeClass.StatusConditions().Get(awsv1.ConditionTypeReady)
	switch {
	case ready == nil || ready.Status == metav1.ConditionUnknown:
		err := fmt.Errorf("%s %s readiness is unknown", awsv1.Kind, nodeClass.Name)
		return nil, cloudprovider.NewCreateError(err, ReasonNodeClassReadinessUnknown, err.Error())
	case ready.Status == metav1.ConditionFalse:
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("%s %s is not ready: %s", awsv1.Kind, nodeClass.Name, ready.Message))
	case ready.ObservedGeneration != nodeClass.Generation:
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("%s %s status has not been reconciled against the latest spec", awsv1.Kind, nodeClass.Name))
	}
	return nodeClass, nil
}

// Delete terminates the NodeClaim's instance; NodeClaimNotFoundError once
// it is gone.
func (c *CloudProvider) Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	id, err := instance.ParseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return cloudprovider.NewNodeClaimNotFoundError(err)
	}
	if err := c.instances.Delete(ctx, id); err != nil {
		if reservation := nodeClaim.Labels[awsv1.LabelCapacityReservationID]; reservation != "" && c.reservations != nil &&
			cloudprovider.IsNodeClaimNotFoundError(err) {
			// The instance is gone: its place in the reservation is free.
			c.reservations.MarkTerminated(reservation)
		}
		return err
	}
	c.instances.Forget(nodeClaim.UID)
	return nil
}

// Get returns the instance with the providerID as a NodeClaim.
func (c *CloudProvider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	id, err := instance.ParseProviderID(providerID)
	if err != nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(err)
	}
	inst, err := c.instances.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return c.describe(ctx, inst, map[string][]*cloudprovider.InstanceType{})
}

// List returns every instance karp launched in the cluster.
func (c *CloudProvider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	instances, err := c.instances.List(ctx)
	if err != nil {
		return nil, err
	}
	types := map[string][]*cloudprovider.InstanceType{}
	out := make([]*karpv1.NodeClaim, 0, len(instances))
	for _, inst := range instances {
		nc, err := c.describe(ctx, inst, types)
		if err != nil {
			return nil, err
		}
		out = append(out, nc)
	}
	return out, nil
}

// describe turns an existing instance into a NodeClaim, with the labels,
// capacity and allocatable of its instance type when its EC2NodeClass is
// still there (types caches the lists per EC2NodeClass).
func (c *CloudProvider) describe(ctx context.Context, inst *instance.Instance, types map[string][]*cloudprovider.InstanceType) (*karpv1.NodeClaim, error) {
	name := inst.Tags[awsv1.TagNodeClass]
	list, ok := types[name]
	var nodeClass *awsv1.EC2NodeClass
	if !ok && name != "" {
		var err error
		if nodeClass, err = c.nodeClass(ctx, name); err != nil {
			return nil, err
		}
		if nodeClass != nil {
			// Without instance types the NodeClaim just has fewer fields.
			list, _ = c.instanceTypes.List(ctx, nodeClass)
		}
		types[name] = list
	}
	var it *cloudprovider.InstanceType
	for _, t := range list {
		if t.Name == inst.Type {
			it = t
		}
	}
	return hydrate(&karpv1.NodeClaim{}, inst, it, nil, zoneID(nodeClass, inst.Zone), c.clock.Now()), nil
}

func zoneID(nodeClass *awsv1.EC2NodeClass, zone string) string {
	if nodeClass == nil {
		return ""
	}
	for _, s := range nodeClass.Status.Subnets {
		if s.Zone == zone {
			return s.ZoneID
		}
	}
	return ""
}

// hydrate returns base with what the instance says was launched.
func hydrate(base *karpv1.NodeClaim, inst *instance.Instance, it *cloudprovider.InstanceType, nodeClaim *karpv1.NodeClaim, zoneID string, now time.Time) *karpv1.NodeClaim {
	out := base.DeepCopy()
	labels := map[string]string{}
	if nodeClaim != nil && it != nil {
		offering := &cloudprovider.Offering{Zone: inst.Zone, CapacityType: inst.CapacityType, ReservationID: inst.ReservationID}
		labels = cloudprovider.LaunchLabels(nodeClaim, cloudprovider.Launch{InstanceType: it, Offering: offering})
	} else if it != nil {
		for k, v := range it.Requirements.Labels() {
			labels[k] = v
		}
	}
	labels[corev1.LabelInstanceTypeStable] = inst.Type
	labels[corev1.LabelTopologyZone] = inst.Zone
	labels[karpv1.CapacityTypeLabelKey] = inst.CapacityType
	if zoneID != "" {
		labels[awsv1.LabelTopologyZoneID] = zoneID
	}
	if inst.ReservationID != "" {
		labels[scheduling.LabelReservationID] = inst.ReservationID
		labels[awsv1.LabelCapacityReservationID] = inst.ReservationID
		if inst.ReservationType != "" {
			labels[awsv1.LabelCapacityReservationType] = inst.ReservationType
			labels[awsv1.LabelCapacityReservationInterruptible] = strconv.FormatBool(inst.ReservationInterruptible)
		}
	} else {
		// Requirement labels of the type may list reservations; an
		// instance outside one carries none.
		delete(labels, scheduling.LabelReservationID)
		delete(labels, awsv1.LabelCapacityReservationID)
		delete(labels, awsv1.LabelCapacityReservationType)
		delete(labels, awsv1.LabelCapacityReservationInterruptible)
	}
	if v := inst.Tags[awsv1.TagNodePool]; v != "" {
		labels[karpv1.NodePoolLabelKey] = v
	}
	placementLabels(labels, inst)
	out.Labels = labels
	if name := inst.Tags[awsv1.TagNodeClaim]; out.Name == "" && name != "" {
		out.Name = name
	}
	out.CreationTimestamp = metav1.NewTime(inst.LaunchTime)
	if inst.State == "shutting-down" || inst.State == "terminated" {
		deleted := metav1.NewTime(now)
		out.DeletionTimestamp = &deleted
	}
	out.Status.ProviderID = inst.ProviderID()
	out.Status.ImageID = inst.ImageID
	if it != nil {
		out.Status.Capacity = nonZero(it.Capacity)
		out.Status.Allocatable = nonZero(it.Allocatable)
	}
	return out
}

// nonZero copies a resource list without its zero quantities.
func nonZero(rl corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range rl {
		if !v.IsZero() {
			out[k] = v.DeepCopy()
		}
	}
	return out
}
