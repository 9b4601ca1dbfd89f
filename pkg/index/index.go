// Package index names the cache field indexes the karp manager installs and
// installs them. Controllers list by these keys (client.MatchingFields)
// instead of scanning every object; the names are fixed so every
// controller and test agrees on them.
//
// Lookups that go through an index (a Node's NodeClaim by providerID)
// live here too, written once, so every controller reads them the same
// way.
//
// The package imports only API types and controller-runtime; it must not
// import pkg/controllers or pkg/operator.
package index

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Field index keys.
const (
	// PodNodeName indexes Pods by spec.nodeName.
	PodNodeName = "spec.nodeName"
	// NodeProviderID indexes Nodes by spec.providerID.
	NodeProviderID = "spec.providerID"
	// NodeClaimProviderID indexes NodeClaims by status.providerID.
	NodeClaimProviderID = "status.providerID"
	// NodeClaimNodeClassGroup, -Kind and -Name index NodeClaims by spec.nodeClassRef.
	NodeClaimNodeClassGroup = "spec.nodeClassRef.group"
	NodeClaimNodeClassKind  = "spec.nodeClassRef.kind"
	NodeClaimNodeClassName  = "spec.nodeClassRef.name"
	// NodeClaimProvisioningBatch indexes NodeClaims by their
	// karp.sh/provisioning-batch annotation.
	NodeClaimProvisioningBatch = "metadata.annotations.provisioning-batch"
	// NodePoolNodeClassGroup, -Kind and -Name index NodePools by spec.template.spec.nodeClassRef.
	NodePoolNodeClassGroup = "spec.template.spec.nodeClassRef.group"
	NodePoolNodeClassKind  = "spec.template.spec.nodeClassRef.kind"
	NodePoolNodeClassName  = "spec.template.spec.nodeClassRef.name"
)

type field struct {
	obj     client.Object
	name    string
	extract client.IndexerFunc
}

// fields lists every index, one per entry.
var fields = []field{
	{&corev1.Pod{}, PodNodeName, func(o client.Object) []string { return nonEmpty(o.(*corev1.Pod).Spec.NodeName) }},
	{&corev1.Node{}, NodeProviderID, func(o client.Object) []string { return nonEmpty(o.(*corev1.Node).Spec.ProviderID) }},
	{&karpv1.NodeClaim{}, NodeClaimProviderID, func(o client.Object) []string {
		return nonEmpty(o.(*karpv1.NodeClaim).Status.ProviderID)
	}},
	{&karpv1.NodeClaim{}, NodeClaimProvisioningBatch, func(o client.Object) []string {
		return nonEmpty(o.GetAnnotations()[karpv1.ProvisioningBatchAnnotationKey])
	}},
	{&karpv1.NodeClaim{}, NodeClaimNodeClassGroup, nodeClaimRef(func(r *karpv1.NodeClassReference) string { return r.Group })},
	{&karpv1.NodeClaim{}, NodeClaimNodeClassKind, nodeClaimRef(func(r *karpv1.NodeClassReference) string { return r.Kind })},
	{&karpv1.NodeClaim{}, NodeClaimNodeClassName, nodeClaimRef(func(r *karpv1.NodeClassReference) string { return r.Name })},
	{&karpv1.NodePool{}, NodePoolNodeClassGroup, nodePoolRef(func(r *karpv1.NodeClassReference) string { return r.Group })},
	{&karpv1.NodePool{}, NodePoolNodeClassKind, nodePoolRef(func(r *karpv1.NodeClassReference) string { return r.Kind })},
	{&karpv1.NodePool{}, NodePoolNodeClassName, nodePoolRef(func(r *karpv1.NodeClassReference) string { return r.Name })},
}

// Install adds every index to indexer (the manager's field indexer).
func Install(ctx context.Context, indexer client.FieldIndexer) error {
	var errs []error
	for _, f := range fields {
		if err := indexer.IndexField(ctx, f.obj, f.name, f.extract); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func nonEmpty(v string) []string {
	if v == "" {
		return nil
	}
	return []string{v}
}

func nodeClaimRef(get func(*karpv1.NodeClassReference) string) client.IndexerFunc {
	return func(o client.Object) []string {
		ref := o.(*karpv1.NodeClaim).Spec.NodeClassRef
		if ref == nil {
			return nil
		}
		return nonEmpty(get(ref))
	}
}

func nodePoolRef(get func(*karpv1.NodeClassReference) string) client.IndexerFunc {
	return func(o client.Object) []string {
		ref := o.(*karpv1.NodePool).Spec.Template.Spec.NodeClassRef
		if ref == nil {
			return nil
		}
		return nonEmpty(get(ref))
	}
}
