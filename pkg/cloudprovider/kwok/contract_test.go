package kwok

import (
	"testing"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test/contract"
)

func TestContract(t *testing.T) {
	nodeClass := readyNodeClass(t, nil)
	contract.Run(t, func(t *testing.T) contract.Subject {
		return contract.Subject{
			Provider:  newProvider(t),
			NodeClaim: func(name string) *karpv1.NodeClaim { return newNodeClaim(name, nodeClass.Name) },
		}
	})
}
