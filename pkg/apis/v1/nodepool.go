package v1

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool is a template for the NodeClaims karp launches and the policy for
// disrupting them: which instances may be used (requirements), what the
// nodes look like (labels, taints), how much may be launched (limits) and
// when nodes may be consolidated or replaced (disruption).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodepools,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.nodes
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.template.spec.nodeClassRef.name",description="the NodeClass nodes are launched with"
// +kubebuilder:printcolumn:name="Nodes",type="string",JSONPath=".status.resources.nodes",description="number of nodes in the pool"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1
// +kubebuilder:printcolumn:name="CPU",type="string",JSONPath=".status.resources.cpu",priority=1
// +kubebuilder:printcolumn:name="Memory",type="string",JSONPath=".status.resources.memory",priority=1
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NodePoolSpec `json:"spec"`
	// +optional
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolList is a list of NodePools.
//
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}

// NodePoolSpec is the desired state of a NodePool.
//
// +kubebuilder:validation:XValidation:message="Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes",rule="has(self.replicas) == has(oldSelf.replicas)"
// +kubebuilder:validation:XValidation:message="only 'limits.nodes' is supported on static NodePools",rule="!has(self.replicas) || !has(self.limits) || self.limits.all(k, k == 'nodes')",fieldPath=".limits"
// +kubebuilder:validation:XValidation:message="'weight' cannot be set on static NodePools",rule="!has(self.replicas) || !has(self.weight)",fieldPath=".weight"
type NodePoolSpec struct {
	// Template describes the NodeClaims karp creates for this pool. Changes
	// to it (except requirements) drift the existing NodeClaims.
	// +required
	Template NodeClaimTemplate `json:"template"`
	// Disruption controls when and how fast nodes in the pool may be
	// consolidated or replaced.
	// +kubebuilder:default:={consolidateAfter: "0s"}
	// +optional
	Disruption Disruption `json:"disruption"`
	// Limits caps the total capacity of the nodes in this pool. Any resource
	// name may be used, including "nodes" for a node count.
	// +optional
	Limits Limits `json:"limits,omitempty"`
	// Weight orders NodePools: higher weights are tried first. Pools of the
	// same weight are ordered by name.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
	// Replicas makes the pool static: karp keeps exactly this many nodes and
	// does not consolidate them (alpha).
	// +kubebuilder:validation:Minimum:=0
	// +optional
	Replicas *int64 `json:"replicas,omitempty"`
}

// NodeClaimTemplate is the part of a NodePool copied onto each NodeClaim.
type NodeClaimTemplate struct {
	// +optional
	ObjectMeta ObjectMeta `json:"metadata,omitempty"`
	// +required
	Spec NodeClaimTemplateSpec `json:"spec"`
}

// ObjectMeta is the metadata a NodePool puts on its NodeClaims and Nodes.
type ObjectMeta struct {
	// Labels are copied onto every NodeClaim and Node of the pool.
	// Keys in the karpenter.sh domain (except the well-known ones) and
	// kubernetes.io/hostname are restricted; the kubernetes.io and k8s.io
	// domains are open, as upstream. The value rules are added to the
	// generated CRD by hack/crdpatch.
	// +kubebuilder:validation:MaxProperties:=100
	// +kubebuilder:validation:XValidation:message="label keys must be qualified names (an optional DNS subdomain prefix and '/', then a name of at most 63 characters)",rule="self.all(x, x.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))"
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.sh\" is restricted",rule="self.all(x, x in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !x.matches('^([^/]*[.])?karpenter[.]sh/'))"
	// +kubebuilder:validation:XValidation:message="label \"karpenter.sh/nodepool\" is restricted",rule="self.all(x, x != 'karpenter.sh/nodepool')"
	// +kubebuilder:validation:XValidation:message="label \"kubernetes.io/hostname\" is restricted",rule="self.all(x, x != 'kubernetes.io/hostname')"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are copied onto every NodeClaim and synced to its Node.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is the NodeClaim spec a NodePool stamps out; the
// provisioner adds resource requests and narrows the requirements per claim.
type NodeClaimTemplateSpec struct {
	// Taints are put on every Node of the pool; pods must tolerate them.
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are put on Nodes at registration and are expected to be
	// removed by another agent before the node counts as initialized; pods
	// need not tolerate them.
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements restrict the instance types, zones, capacity types and
	// other labels of the nodes launched for this pool.
	// +kubebuilder:validation:MaxItems:=100
	// +kubebuilder:validation:XValidation:message="label \"karpenter.sh/nodepool\" is restricted",rule="self.all(x, x.key != 'karpenter.sh/nodepool')"
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements" hash:"ignore"` // not in the template hash (see NodePool.Hash)
	// NodeClassRef names the provider NodeClass nodes are launched with.
	// Its group and kind cannot change.
	// +kubebuilder:validation:XValidation:message="nodeClassRef.group is immutable",rule="self.group == oldSelf.group"
	// +kubebuilder:validation:XValidation:message="nodeClassRef.kind is immutable",rule="self.kind == oldSelf.kind"
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod is the longest karp waits for a node to drain
	// once it is being deleted; after it, PDBs and do-not-disrupt are bypassed.
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long a node may live before karp replaces it, or
	// Never.
	// +kubebuilder:default:="720h"
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitempty"`
}

// ConsolidationPolicy says which nodes consolidation may remove or replace.
//
// +kubebuilder:validation:Enum:={WhenEmpty,WhenEmptyOrUnderutilized,Balanced}
type ConsolidationPolicy string

const (
	// ConsolidationPolicyWhenEmpty consolidates only nodes with no workload pods.
	ConsolidationPolicyWhenEmpty ConsolidationPolicy = "WhenEmpty"
	// ConsolidationPolicyWhenEmptyOrUnderutilized also removes or replaces
	// nodes whose pods fit elsewhere or on a cheaper node (the default).
	ConsolidationPolicyWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	// ConsolidationPolicyBalanced weighs the savings of a move against the
	// disruption it causes and skips moves that are not worth it.
	ConsolidationPolicyBalanced ConsolidationPolicy = "Balanced"
)

// DisruptionReason is why karp voluntarily disrupts a node; budgets may be
// scoped to reasons.
//
// +kubebuilder:validation:Enum:={Underutilized,Empty,Drifted}
type DisruptionReason string

const (
	// DisruptionReasonUnderutilized: the node's pods fit elsewhere or on a cheaper node.
	DisruptionReasonUnderutilized DisruptionReason = "Underutilized"
	// DisruptionReasonEmpty: the node runs no workload pods.
	DisruptionReasonEmpty DisruptionReason = "Empty"
	// DisruptionReasonDrifted: the node no longer matches its NodePool or NodeClass.
	DisruptionReasonDrifted DisruptionReason = "Drifted"
)

// DisruptionReasons lists every DisruptionReason.
var DisruptionReasons = []DisruptionReason{DisruptionReasonUnderutilized, DisruptionReasonEmpty, DisruptionReasonDrifted}

// Disruption is the voluntary-disruption policy of a NodePool.
type Disruption struct {
	// ConsolidateAfter is how long a node must see no pod events before it
	// may be consolidated; Never turns consolidation (and emptiness) off.
	// +kubebuilder:default:="0s"
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +required
	ConsolidateAfter NillableDuration `json:"consolidateAfter"`
	// ConsolidationPolicy says which nodes are candidates for consolidation.
	// +kubebuilder:default:=WhenEmptyOrUnderutilized
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// Budgets cap how many nodes may be disrupted at once. The most
	// restrictive active budget that matches the reason applies.
	// +kubebuilder:validation:XValidation:message="'schedule' must be set with 'duration'",rule="self.all(x, has(x.schedule) == has(x.duration))"
	// +kubebuilder:default:={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems:=50
	// +optional
	Budgets []Budget `json:"budgets,omitempty"`
}

// Budget limits the number of nodes of a pool that may be disrupted at the
// same time, optionally only during a recurring window and only for some
// reasons.
type Budget struct {
	// Reasons the budget applies to; empty means every reason.
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`
	// Nodes is the number ("5") or percentage ("10%", rounded up) of the
	// pool's nodes that may be disrupted at once.
	// +kubebuilder:validation:Pattern:="^((100|[0-9]{1,2})%|[0-9]+)$"
	// +kubebuilder:default:="10%"
	Nodes string `json:"nodes"`
	// Schedule is a cron expression (UTC, five fields or @hourly/@daily/...)
	// for the start of the window in which the budget is active.
	// +kubebuilder:validation:Pattern:=`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`
	// +optional
	Schedule *string `json:"schedule,omitempty"`
	// Duration is how long the window lasts after each schedule hit, in
	// hours and minutes ("8h", "1h30m").
	// +kubebuilder:validation:Pattern=`^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`
	// +kubebuilder:validation:Type="string"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// Limits is the most capacity a NodePool may hold, per resource.
type Limits corev1.ResourceList

// ExceededBy returns an error naming the first resource for which usage
// is above the limit, or nil. Resources without a limit are unbounded.
func (l Limits) ExceededBy(usage corev1.ResourceList) error {
	names := make([]string, 0, len(l))
	for name := range l {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		limit := l[corev1.ResourceName(name)]
		if used, ok := usage[corev1.ResourceName(name)]; ok && used.Cmp(limit) > 0 {
			return fmt.Errorf("%s resource usage of %v exceeds limit of %v", name, used.String(), limit.String())
		}
	}
	return nil
}
