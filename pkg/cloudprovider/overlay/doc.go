// Package overlay applies NodeOverlays (karpenter.sh/v1alpha1) to the
// instance types a cloud provider returns: the pure rules (which overlay
// applies to which instance type and offering, in what order, and which
// overlays conflict), the Store the NodeOverlay controller publishes its
// evaluation into, and the CloudProvider decorator that pkg/operator wraps
// around the provider when the NodeOverlay feature gate is on.
//
// Rules, as upstream Karpenter's: overlays are ordered by weight (highest
// first; unset is 0), then by name, the name that sorts last first. An
// overlay applies to an instance type of a NodePool when its requirements
// are compatible with the type's labels, the NodePool's name
// (karpenter.sh/nodepool) and its template labels; zone, capacity type and
// reservation ID requirements select among the type's offerings. Each
// offering takes the price change of the first overlay that applies to it;
// each extended resource the capacity of the first overlay that sets it.
// Two overlays of one weight that would set the same offering's price or
// the same resource conflict: the later one is not applied at all.
//
// The decorator refuses (UnevaluatedNodePoolError) to return instance
// types until the controller has evaluated the overlays as they are now,
// so the provisioner and disruption wait instead of acting on stale prices.
//
// Import rule: pkg/apis, pkg/cloudprovider, pkg/scheduling, k8s.io and
// controller-runtime's client; never pkg/controllers.
package overlay
