package v1

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Labels karp reads or writes on NodeClaims and Nodes.
const (
	// NodePoolLabelKey names the NodePool a NodeClaim or Node belongs to.
	NodePoolLabelKey = Group + "/nodepool"
	// ReservationIDLabelKey names the capacity reservation of a reserved
	// launch, in its NodeClaim's requirements and on the Node. NodeClaims
	// may require it, NodePools may not (karp's key; upstream uses the
	// provider's label, such as karpenter.k8s.aws/capacity-reservation-id,
	// which karp also sets).
	ReservationIDLabelKey = Group + "/reservation-id"
	// CapacityTypeLabelKey is the purchase option of the instance.
	CapacityTypeLabelKey = Group + "/capacity-type"
	// NodeRegisteredLabelKey is set to "true" once the Node registered.
	NodeRegisteredLabelKey = Group + "/registered"
	// NodeInitializedLabelKey is set to "true" once the Node initialized.
	NodeInitializedLabelKey = Group + "/initialized"
	// NodeDoNotSyncTaintsLabelKey, set to "true" by a provider, stops karp
	// from syncing taints onto the Node at registration.
	NodeDoNotSyncTaintsLabelKey = Group + "/do-not-sync-taints"
	// NodeExcludeFromLoadBalancersLabelKey is added to Nodes being drained.
	NodeExcludeFromLoadBalancersLabelKey = "node.kubernetes.io/exclude-from-external-load-balancers"

	LabelTopologyZone       = corev1.LabelTopologyZone
	LabelTopologyRegion     = corev1.LabelTopologyRegion
	LabelInstanceTypeStable = corev1.LabelInstanceTypeStable
	LabelArchStable         = corev1.LabelArchStable
	LabelOSStable           = corev1.LabelOSStable
	LabelWindowsBuild       = corev1.LabelWindowsBuild
	LabelHostname           = corev1.LabelHostname
)

// Values of CapacityTypeLabelKey.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// Values of LabelArchStable.
const (
	ArchitectureAmd64 = "amd64"
	ArchitectureArm64 = "arm64"
)

// Annotations karp reads or writes.
const (
	// DoNotDisruptAnnotationKey on a Pod ("true" or a duration) or on a
	// Node/NodeClaim ("true") blocks voluntary disruption.
	DoNotDisruptAnnotationKey = Group + "/do-not-disrupt"
	// NodePoolHashAnnotationKey holds the hash of a NodePool's template; a
	// NodeClaim whose copy differs has drifted.
	NodePoolHashAnnotationKey = Group + "/nodepool-hash"
	// NodePoolHashVersionAnnotationKey holds the hash algorithm version;
	// hashes of different versions are not compared.
	NodePoolHashVersionAnnotationKey = Group + "/nodepool-hash-version"
	// NodePoolHashVersion is the current hash algorithm version.
	NodePoolHashVersion = "v3"
	// NodeClaimTerminationTimestampAnnotationKey holds the RFC3339 time by
	// which the node must be gone (deletion + terminationGracePeriod).
	NodeClaimTerminationTimestampAnnotationKey = Group + "/nodeclaim-termination-timestamp"
	// NodeClaimMinValuesRelaxedAnnotationKey is "true" when minValues were
	// relaxed to launch the NodeClaim.
	NodeClaimMinValuesRelaxedAnnotationKey = Group + "/nodeclaim-min-values-relaxed"
	// RequestedDRADriversAnnotationKey lists the DRA drivers the NodeClaim's pods need.
	RequestedDRADriversAnnotationKey = Group + "/requested-dra-drivers"
	// PriceOverlayAppliedAnnotationKey is "true" when a NodeOverlay changed the price.
	PriceOverlayAppliedAnnotationKey = Group + "/price-overlay-applied"
	// CapacityOverlayAppliedAnnotationKey is "true" when a NodeOverlay changed the capacity.
	CapacityOverlayAppliedAnnotationKey = Group + "/capacity-overlay-applied"
	// PodDeletionCostAnnotationKey feeds the eviction cost of a pod.
	PodDeletionCostAnnotationKey = "controller.kubernetes.io/pod-deletion-cost"
)

// TerminationFinalizer holds NodeClaims and Nodes until karp drained the
// node and deleted the instance.
const TerminationFinalizer = Group + "/termination"

// WellKnownLabels are the label keys every instance type defines. A
// NodePool may leave them unconstrained and still match pods that select on
// them. Providers add their own (see IsRestrictedLabel's extra argument).
var WellKnownLabels = sets.New(
	NodePoolLabelKey,
	LabelTopologyZone,
	LabelTopologyRegion,
	LabelInstanceTypeStable,
	LabelArchStable,
	LabelOSStable,
	CapacityTypeLabelKey,
	LabelWindowsBuild,
)

// RestrictedLabelDomains are the label domains (and their subdomains) users
// may not set on NodePool templates or requirements, except for well-known
// labels. Only karp's own domain is reserved: like upstream Karpenter (which
// dropped its kubernetes.io and k8s.io restrictions), karp lets users set
// labels such as app.kubernetes.io/name or k8s.io/team, which it syncs onto
// Nodes itself rather than through the kubelet.
var RestrictedLabelDomains = sets.New(
	Group,
)

// RestrictedLabels may never be set on a NodePool template.
var RestrictedLabels = sets.New(
	NodePoolLabelKey,
	LabelHostname,
)

// NormalizedLabels maps deprecated label keys to the stable keys karp uses.
var NormalizedLabels = map[string]string{
	corev1.LabelFailureDomainBetaZone:   LabelTopologyZone,
	corev1.LabelFailureDomainBetaRegion: LabelTopologyRegion,
	"beta.kubernetes.io/arch":           LabelArchStable,
	"beta.kubernetes.io/os":             LabelOSStable,
	corev1.LabelInstanceType:            LabelInstanceTypeStable,
}

// GetLabelDomain returns the prefix of a label key before "/", or "".
func GetLabelDomain(key string) string {
	if domain, _, found := strings.Cut(key, "/"); found {
		return domain
	}
	return ""
}

// IsRestrictedLabel returns an error when key may not be set by users on a
// NodePool template: the always-restricted labels, and keys in a restricted
// domain (or a subdomain of it) that are not well known (core or the extra
// ones a provider passes).
func IsRestrictedLabel(key string, extraWellKnown ...sets.Set[string]) error {
	if RestrictedLabels.Has(key) {
		return fmt.Errorf("label %s is restricted", key)
	}
	if WellKnownLabels.Has(key) {
		return nil
	}
	for _, extra := range extraWellKnown {
		if extra.Has(key) {
			return nil
		}
	}
	domain := GetLabelDomain(key)
	for restricted := range RestrictedLabelDomains {
		if inDomain(domain, restricted) {
			return fmt.Errorf("label %s is in the restricted domain %s", key, restricted)
		}
	}
	return nil
}

// inDomain reports whether domain is d or a subdomain of d.
func inDomain(domain, d string) bool {
	return domain == d || strings.HasSuffix(domain, "."+d)
}
