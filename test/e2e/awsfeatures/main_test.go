// Package awsfeatures_test proves the AWS provider's EC2 behaviours of
// issue #28 end to end on the full local control plane: EFA interfaces
// for pods that request vpc.amazonaws.com/efa, dedicated tenancy, capacity
// blocks drained before they end, instances replaced when EC2 reports
// them impaired, and ARC zonal shifts steering launches away from a zone.
// One karp controller process runs with --cloud-provider=aws and
// --enable-zonal-shift against one simulated AWS account
// (pkg/test/awssim) served on loopback and reached through the SDK's
// endpoint settings; the simulated kubelets register a Node for each
// instance it launches. Each behaviour is a parallel subtest of
// TestEC2Features with its own EC2NodeClass, NodePool and namespace, and
// asserts what a user sees in the cluster and in the account.
package awsfeatures_test

import (
	"testing"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/awsenv"
)

func TestMain(m *testing.M) { framework.Main(m) }

// TestEC2Features runs the behaviours in parallel on one controller: each
// mostly waits on a controller's period (capacity block expiry, instance
// status polls, zonal shift reads), so together they take as long as the
// slowest. Their pools keep out of each other's way: the zonal shift is
// on a zone of its own pool's (b or c) and the capacity block is in a.
func TestEC2Features(t *testing.T) {
	e := awsenv.Start(t, "--enable-zonal-shift")
	for _, tc := range []struct {
		name string
		run  func(*testing.T, *awsenv.Env)
	}{
		{"EFA", testEFA},
		{"CapacityBlockExpiry", testCapacityBlockExpiry},
		{"DedicatedTenancy", testDedicatedTenancy},
		{"ImpairedInstanceReplaced", testImpairedInstanceReplaced},
		{"ZonalShift", testZonalShift},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, e)
		})
	}
}
