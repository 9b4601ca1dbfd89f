// Package disruption holds the end-to-end tests of disruption and
// termination: consolidation, budgets, DaemonSet fit, do-not-disrupt,
// interruption, a restart mid-consolidation and the graceful drain (drift,
// expiration and repair are in test/e2e/signals), on one local cluster (etcd, kube-apiserver,
// kube-scheduler, kube-controller-manager, kwok) shared by the package.
// Tests use their own NodePools and namespaces and clean up after
// themselves, so they do not interfere.
package disruption

import (
	"testing"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }
