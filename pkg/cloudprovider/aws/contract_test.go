package aws_test

import (
	"testing"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test/contract"
)

// TestContract runs the shared provider contract against the AWS provider
// on the EC2 and Pricing fakes, as it runs for kwok and fake.
func TestContract(t *testing.T) {
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	contract.Run(t, func(t *testing.T) contract.Subject {
		return contract.Subject{
			Provider:  newWorld(t).Provider,
			NodeClaim: func(name string) *karpv1.NodeClaim { return newNodeClaim(name, nodeClass.Name) },
			NodePool:  func() *karpv1.NodePool { return nodePool(nodeClass.Name) },
		}
	})
}
