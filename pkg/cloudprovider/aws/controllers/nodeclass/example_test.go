package nodeclass_test

import (
	"context"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	awsssm "github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/capacityreservation"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclass"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclass/hash"
	ssmcontroller "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/providers/ssm"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/securitygroup"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/subnet"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/version"
)

// The operator builds the discovery providers once, shares them with the
// launch path, and registers the three controllers.
func ExampleNewController() {
	ctx := context.Background()
	var mgr manager.Manager // the operator's manager
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	ec2Client, ssmClient, iamClient := ec2.NewFromConfig(cfg), awsssm.NewFromConfig(cfg), iam.NewFromConfig(cfg)
	clk := clock.RealClock{}
	disco, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		panic(err)
	}
	versions := version.NewProvider(disco, clk)
	amis := ami.NewProvider(ec2Client, ssmClient, versions, clk, ami.DefaultRefreshInterval)
	providers := nodeclass.Providers{
		AMIs:           amis,
		Subnets:        subnet.NewProvider(ec2Client, clk, subnet.DefaultRefreshInterval),
		SecurityGroups: securitygroup.NewProvider(ec2Client, clk),
		// nil when the ReservedCapacity feature gate is off.
		CapacityReservations: capacityreservation.NewProvider(ec2Client, clk),
		Version:              versions,
		InstanceProfiles:     instanceprofile.NewProvider(iamClient, clk, "my-cluster", cfg.Region),
	}
	for _, c := range []interface {
		Register(context.Context, manager.Manager) error
	}{
		nodeclass.NewController(mgr.GetClient(), mgr.GetEventRecorder("karpenter"), clk, providers),
		hash.NewController(mgr.GetClient()),
		ssmcontroller.NewController(amis),
	} {
		if err := c.Register(ctx, mgr); err != nil {
			panic(err)
		}
	}
}
