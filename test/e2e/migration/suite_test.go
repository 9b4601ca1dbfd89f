// Package migration is the end-to-end test of taking a cluster over from
// upstream Karpenter: NodePools, NodeClaims and Nodes exactly as upstream
// leaves them (labels, annotations with hashes computed by upstream's own
// NodePool.Hash(), finalizers, status) are handed to karp, which must
// neither drift, taint, replace nor delete anything the workload needs.
package migration

import (
	"testing"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }
