package aws_test

import (
	"encoding/base64"
	"net/http"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/utils/clock"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/test/awssim"
	"github.com/karp-autoscaler/karp/pkg/test/awstest"
)

// TestDriftOverTheWire launches and checks drift through the SDK's real
// EC2 client against the EC2 fake served in the EC2 query protocol: the
// instances' subnet, security groups and image survive the XML of
// DescribeInstances (a lost field would drift every node), and a pass over
// the NodeClaims is one DescribeInstances request (the SDK's retries of it,
// on a loaded machine, not counted).
func TestDriftOverTheWire(t *testing.T) {
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	w := newWorld(t)
	router := awssim.NewRouter(map[string]http.Handler{"ec2": awssim.NewEC2Handler(w.EC2)})
	url, stop, err := awssim.Listen(router)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	client := ec2.New(ec2.Options{
		BaseEndpoint: awssdk.String(url),
		Region:       awstest.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
	})
	clk := clock.RealClock{}
	lts := launchtemplate.NewProvider(client, clk, launchtemplate.Options{
		ClusterName:     clusterName,
		ClusterEndpoint: "https://test-cluster.example",
		CABundle:        base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n")),
		ClusterCIDR:     "10.100.0.0/16",
		ClusterDNSIP:    "10.100.0.10",
	})
	provider := aws.New(env.Client, clk, clusterName, w.Types, instance.NewProvider(client, clk, clusterName, w.Unavailable), lts, w.Unavailable)

	var claims []*karpv1.NodeClaim
	for range 5 {
		nc := newNodeClaim("wire", nodeClass.Name)
		created, err := provider.Create(t.Context(), nc)
		if err != nil {
			t.Fatal(err)
		}
		nc.Annotations, nc.Labels, nc.Status = created.Annotations, created.Labels, created.Status
		claims = append(claims, nc)
	}
	pass := func(want cloudprovider.DriftReason) int {
		t.Helper()
		before := router.Invocations("ec2", "DescribeInstances")
		reasons, errs := drifts(t.Context(), provider, claims)
		for i := range claims {
			if errs[i] != nil || reasons[i] != want {
				t.Fatalf("IsDrifted(%s) = %q, %v; want %q", claims[i].Name, reasons[i], errs[i], want)
			}
		}
		return router.Invocations("ec2", "DescribeInstances") - before
	}
	if calls := pass(""); calls != 1 {
		t.Errorf("a pass over %d NodeClaims made %d DescribeInstances requests, want 1", len(claims), calls)
	}
	reconciled(t, nodeClass.Name, moveSubnets)
	if calls := pass(aws.SubnetDrift); calls != 0 {
		t.Errorf("a pass within %s made %d DescribeInstances requests, want 0", aws.DriftInstancesTTL, calls)
	}
}
