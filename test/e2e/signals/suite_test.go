// Package signals holds the end-to-end tests of the disruption signals
// that replace nodes: drift (and a drift whose replacement never
// initializes), expiration and node repair, on one local cluster (etcd,
// kube-apiserver, kube-scheduler, kube-controller-manager, kwok) shared by
// the package. It is apart from test/e2e/disruption so the two run at
// once. Tests use their own NodePools and namespaces and clean up after
// themselves, so they do not interfere.
package signals

import (
	"testing"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }
