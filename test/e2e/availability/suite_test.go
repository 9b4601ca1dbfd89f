// Package availability holds the end-to-end tests of what services see
// while karp disrupts their nodes: Deployments without a PDB whose pods
// take seconds to become Ready, through a drift of every node, a
// consolidation and an expiry of every node, watched pod by pod
// (framework.Availability) on one local cluster (etcd, kube-apiserver,
// kube-scheduler, kube-controller-manager, kwok) shared by the package.
//
// KARP_E2E_AVAILABILITY_BASELINE=1 (make availability) also runs each
// phase with karp's protections off (--respect-rollout-budget=false,
// --replace-first=false, upstream's behaviour) and logs both
// figures; the baseline asserts nothing.
package availability

import (
	"testing"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }
