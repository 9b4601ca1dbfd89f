package aws_test

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// driftTimeout bounds the replacement of a pool's nodes after a drift.
const driftTimeout = 5 * time.Minute

// tag returns an instance tag's value.
func tag(inst ec2types.Instance, key string) string {
	for _, t := range inst.Tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// poolNodes lists the Nodes of a NodePool.
func poolNodes(ctx context.Context, cl client.Client, pool string) []corev1.Node {
	var list corev1.NodeList
	if err := cl.List(ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		return nil
	}
	return list.Items
}
