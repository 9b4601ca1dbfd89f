package kwok

import (
	"context"
	"fmt"
	"strconv"

	"github.com/mitchellh/hashstructure/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// driftCheck returns a non-empty reason when the NodeClaim has drifted.
type driftCheck func(ctx context.Context, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, error)

// IsDrifted runs the drift checks in order and returns the first reason.
func (c *CloudProvider) IsDrifted(ctx context.Context, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	for _, check := range c.driftChecks {
		reason, err := check(ctx, nodeClaim)
		if err != nil || reason != "" {
			return reason, err
		}
	}
	return "", nil
}

// nodeClassDrift compares the KWOKNodeClass hash recorded at launch with
// the current one. NodeClaims without a hash of the current version, or
// whose KWOKNodeClass is gone, are not drifted by this check.
func (c *CloudProvider) nodeClassDrift(ctx context.Context, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	recorded := nodeClaim.Annotations[NodeClassHashAnnotationKey]
	if recorded == "" || nodeClaim.Annotations[NodeClassHashVersionAnnotationKey] != NodeClassHashVersion {
		return "", nil
	}
	ref := nodeClaim.Spec.NodeClassRef
	if ref == nil || ref.Group != kwokv1alpha1.Group || ref.Kind != kwokv1alpha1.Kind {
		return "", nil
	}
	nodeClass := &kwokv1alpha1.KWOKNodeClass{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: ref.Name}, nodeClass); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("getting %s %s: %w", kwokv1alpha1.Kind, ref.Name, err)
	}
	if NodeClassHash(nodeClass) != recorded {
		return cloudprovider.NodeClassDrift, nil
	}
	return "", nil
}

// NodeClassHash hashes the KWOKNodeClass spec the way upstream Karpenter
// hashes a NodePool template and the AWS provider an EC2NodeClass:
// hashstructure FormatV2 with slices as sets, zero values ignored and nil
// pointers as zero values. Fields added to the spec later leave the hash of
// classes that do not set them unchanged.
func NodeClassHash(nodeClass *kwokv1alpha1.KWOKNodeClass) string {
	sum, err := hashstructure.Hash(nodeClass.Spec, hashstructure.FormatV2, &hashstructure.HashOptions{
		SlicesAsSets:    true,
		IgnoreZeroValue: true,
		ZeroNil:         true,
	})
	if err != nil {
		// The spec is plain data (durations); hashing cannot fail.
		panic(fmt.Sprintf("hashing KWOKNodeClass spec: %v", err))
	}
	return strconv.FormatUint(sum, 10)
}
