package aws_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/test/awstest"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// env is a real etcd + kube-apiserver holding the EC2NodeClasses.
var env *environment.Environment

const clusterName = awstest.ClusterName

var zones = awstest.Zones

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	var err error
	env, err = environment.Start(context.Background()) //nolint:forbidigo // TestMain owns the root context of the test binary
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// world is the AWS provider on the fakes (see awstest.World).
type world = awstest.World

func newWorld(t testing.TB) *world { return awstest.NewWorld(t, env) }

func createNodeClass(t testing.TB, nc *awsv1.EC2NodeClass, ready bool) *awsv1.EC2NodeClass {
	t.Helper()
	return awstest.CreateNodeClass(t, env.Client, nc, ready)
}

var (
	newNodeClass = awstest.NewNodeClass
	newNodeClaim = awstest.NewNodeClaim
	nodePool     = awstest.NodePool
)
