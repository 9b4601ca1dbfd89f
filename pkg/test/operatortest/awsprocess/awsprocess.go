// Package awsprocess runs the whole controller process as
// --cloud-provider=aws builds it (core and AWS controllers on one manager)
// against a real API server and the stateful AWS fakes, for the tests that
// exercise karp end to end in one test binary.
package awsprocess

import (
	"context"
	"flag"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/version"
	"github.com/karp-autoscaler/karp/pkg/controllers"
	"github.com/karp-autoscaler/karp/pkg/operator"
	"github.com/karp-autoscaler/karp/pkg/options"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
	"github.com/karp-autoscaler/karp/pkg/test/awstest"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

// Account is an AWS account as the fakes hold it (fake.NewAccount): the
// catalog in awstest's three zones, a subnet per zone (subnet-a, -b, -c)
// and a security group tagged karpenter.sh/discovery=<cluster>, the AL2023
// AMIs for Kubernetes k8s behind their SSM parameters, awstest.NodeRole
// (no instance profile), the catalog's on-demand prices and an EKS that
// knows no cluster. Tests add what they need on top (spot prices, an
// instance profile, the cluster).
func Account(t *testing.T, k8s string) aws.Clients {
	t.Helper()
	account, err := fake.NewAccount(fake.AccountOptions{
		Region: awstest.Region, ClusterName: awstest.ClusterName,
		Network: fake.Network{SubnetIDs: []string{"subnet-a", "subnet-b", "subnet-c"}, FreeIPs: 200, SecurityGroupName: "nodes"},
		AMIs:    []string{"al2023@latest"}, KubernetesVersion: k8s, AMIRelease: time.Now().Add(-24 * time.Hour),
		NodeRole: awstest.NodeRole,
	})
	if err != nil {
		t.Fatal(err)
	}
	return aws.Clients{Region: awstest.Region, EC2: account.EC2, SSM: account.SSM, IAM: account.IAM, Pricing: account.Pricing, EKS: account.EKS}
}

// ServerVersion is the Kubernetes version ("1.31") of the API server at
// cfg, the one the AMIs are published for.
func ServerVersion(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	info, err := disco.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	k8s, err := version.Parse(info)
	if err != nil {
		t.Fatal(err)
	}
	return k8s
}

// Args are the controller's flags for the test cluster on AWS (no leader
// election, metrics and health probes on free ports) followed by extra.
func Args(extra ...string) []string {
	return append([]string{
		"--cloud-provider=aws", "--cluster-name=" + awstest.ClusterName, "--disable-leader-election",
		"--metrics-port=0", "--health-probe-port=0",
	}, extra...)
}

// Run runs the controller process on the API server at cfg over clients,
// with Args(extra...), until the test ends: it is stopped in a cleanup,
// so cleanups the test registered before calling Run run after it
// stopped. A test binary may run it more than once.
func Run(t *testing.T, cfg *rest.Config, clients aws.Clients, extra ...string) {
	t.Helper()
	ctx := t.Context()
	opts, err := options.Parse(flag.NewFlagSet("karp", flag.ContinueOnError), Args(extra...))
	if err != nil {
		t.Fatal(err)
	}
	op, err := operator.New(ctx, cfg, opts, operator.WithoutControllerNameValidation())
	if err != nil {
		t.Fatal(err)
	}
	provider, err := aws.NewProvider(ctx, op.AWSDependencies(opts, cfg), clients)
	if err != nil {
		t.Fatal(err)
	}
	list := controllers.NewControllers(op.Deps(provider.CloudProvider))
	for _, c := range provider.Controllers {
		list = append(list, c)
	}
	if err := op.Register(ctx, list...); err != nil {
		t.Fatal(err)
	}
	operatortest.StartUntilCleanup(t, op)
}

// NodeClass is an al2023@latest EC2NodeClass named name that selects
// Account's subnets and security group and names its node role.
func NodeClass(name string) *awsv1.EC2NodeClass {
	return awstest.NewNodeClass(func(nc *awsv1.EC2NodeClass) {
		nc.Name = name
		nc.Spec.Tags = nil
	})
}

// Poll waits up to a minute for cond, failing the test naming what it
// waited for.
func Poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
