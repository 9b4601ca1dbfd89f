// Package aws_test proves the AWS provider end to end on the full local
// control plane: the karp controller runs as a process with
// --cloud-provider=aws against the simulated AWS (pkg/test/awssim)
// served on loopback, reached through the SDK's standard endpoint settings,
// and the simulated kubelets register a Node for each instance it launches.
// The tests sample real cluster state and the simulated account's.
package aws_test

import (
	"testing"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }
