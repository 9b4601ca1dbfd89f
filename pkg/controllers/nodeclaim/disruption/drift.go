package disruption

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// Drift reasons karp itself detects; a provider's IsDrifted adds its own
// (the kwok provider's NodeClassDrift).
const (
	// ReasonNodePoolDrifted: the NodePool's template hash differs from the
	// one the NodeClaim was launched with.
	ReasonNodePoolDrifted cloudprovider.DriftReason = "NodePoolDrifted"
	// ReasonRequirementsDrifted: the NodeClaim's labels no longer satisfy
	// the NodePool's requirements.
	ReasonRequirementsDrifted cloudprovider.DriftReason = "RequirementsDrifted"
	// ReasonInstanceTypeNotFound: the provider no longer offers the
	// NodeClaim's instance type in its zone and capacity type.
	ReasonInstanceTypeNotFound cloudprovider.DriftReason = "InstanceTypeNotFound"
)

// DriftRecheckInterval is how often drift is re-evaluated without any
// watched change (the provider's offerings change without an event).
const DriftRecheckInterval = 5 * time.Minute

// driftCheck returns a reason and a message when the NodeClaim drifted.
type driftCheck func(ctx context.Context, nodePool *karpv1.NodePool, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, string, error)

// drift sets or clears Drifted. Only launched NodeClaims can drift.
func (c *Controller) drift(ctx context.Context, nodePool *karpv1.NodePool, nodeClaim *karpv1.NodeClaim, conditions karpv1.ConditionSet) (reconcile.Result, error) {
	if !conditions.IsTrue(karpv1.ConditionTypeLaunched) {
		conditions.Clear(karpv1.ConditionTypeDrifted)
		return reconcile.Result{}, nil
	}
	// Checks, in order; the first reason wins.
	checks := []driftCheck{
		// The NodePool template (labels, taints, nodeClassRef, ...) changed.
		nodePoolDrift,
		// The NodePool's requirements exclude the node's labels.
		requirementsDrift,
		// The instance type or its offering disappeared.
		c.instanceTypeDrift,
		// The provider's own view (NodeClass changes).
		c.providerDrift,
	}
	for _, check := range checks {
		reason, message, err := check(ctx, nodePool, nodeClaim)
		if err != nil {
			return reconcile.Result{}, err
		}
		if reason != "" {
			conditions.SetTrueWithReason(karpv1.ConditionTypeDrifted, string(reason), message)
			return requeueIn(DriftRecheckInterval), nil
		}
	}
	conditions.Clear(karpv1.ConditionTypeDrifted)
	return requeueIn(DriftRecheckInterval), nil
}

// nodePoolDrift compares the NodeClaim's template hash with the hash of
// the NodePool's current template, computed here rather than read from the
// pool's annotation, which lags a template change. A NodeClaim without a
// hash, or with one of another hash version, is not drifted: the hash
// controller re-stamps NodeClaims after an algorithm change.
func nodePoolDrift(_ context.Context, nodePool *karpv1.NodePool, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, string, error) {
	claimHash := nodeClaim.Annotations[karpv1.NodePoolHashAnnotationKey]
	if claimHash == "" || nodeClaim.Annotations[karpv1.NodePoolHashVersionAnnotationKey] != karpv1.NodePoolHashVersion {
		return "", "", nil
	}
	if claimHash != nodePool.Hash() {
		return ReasonNodePoolDrifted, fmt.Sprintf("NodePool %s template changed", nodePool.Name), nil
	}
	return "", "", nil
}

// requirementsDrift checks the NodeClaim's labels against the NodePool's
// requirements. Well-known labels the NodeClaim lacks are not drift.
func requirementsDrift(_ context.Context, nodePool *karpv1.NodePool, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, string, error) {
	poolReqs := scheduling.NewRequirements()
	for _, r := range nodePool.Spec.Template.Spec.Requirements {
		poolReqs.Add(scheduling.NewRequirement(r.Key, r.Operator, r.Values...))
	}
	claimReqs := scheduling.NewLabelRequirements(nodeClaim.Labels)
	if err := claimReqs.Compatible(poolReqs, karpv1.WellKnownLabels); err != nil {
		return ReasonRequirementsDrifted, fmt.Sprintf("NodePool %s requirements no longer match: %s", nodePool.Name, err), nil
	}
	return "", "", nil
}

// instanceTypeDrift reports a NodeClaim whose instance type the provider
// no longer lists for the pool, or lists with no offering in the node's
// zone and capacity type. Availability does not matter: an offering that
// is only out of capacity still exists. A reserved node whose reservation
// ends becomes on-demand, so an on-demand offering also keeps it.
func (c *Controller) instanceTypeDrift(ctx context.Context, nodePool *karpv1.NodePool, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, string, error) {
	name := nodeClaim.Labels[corev1.LabelInstanceTypeStable]
	if name == "" {
		return "", "", nil
	}
	types, err := c.cloudProvider.GetInstanceTypes(ctx, nodePool)
	if err != nil {
		return "", "", fmt.Errorf("getting instance types: %w", err)
	}
	for _, it := range types {
		if it.Name != name {
			continue
		}
		if hasOffering(it, nodeClaim.Labels) {
			return "", "", nil
		}
		return ReasonInstanceTypeNotFound, fmt.Sprintf("instance type %s has no offering in %s %s", name,
			nodeClaim.Labels[corev1.LabelTopologyZone], nodeClaim.Labels[karpv1.CapacityTypeLabelKey]), nil
	}
	return ReasonInstanceTypeNotFound, fmt.Sprintf("instance type %s is no longer offered", name), nil
}

func hasOffering(it *cloudprovider.InstanceType, labels map[string]string) bool {
	reqs := scheduling.NewRequirements()
	if zone := labels[corev1.LabelTopologyZone]; zone != "" {
		reqs.Add(scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone))
	}
	if ct := labels[karpv1.CapacityTypeLabelKey]; ct != "" {
		values := []string{ct}
		if ct == karpv1.CapacityTypeReserved {
			values = append(values, karpv1.CapacityTypeOnDemand)
		}
		reqs.Add(scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, values...))
	}
	for _, o := range it.Offerings {
		if o.CompatibleWith(reqs) {
			return true
		}
	}
	return false
}

// providerDrift asks the cloud provider (NodeClass changes).
func (c *Controller) providerDrift(ctx context.Context, _ *karpv1.NodePool, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, string, error) {
	reason, err := c.cloudProvider.IsDrifted(ctx, nodeClaim)
	if err != nil {
		return "", "", fmt.Errorf("checking provider drift: %w", err)
	}
	if reason == "" {
		return "", "", nil
	}
	return reason, fmt.Sprintf("cloud provider reports drift: %s", reason), nil
}
