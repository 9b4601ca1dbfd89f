package operator

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	pricingapi "github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/client-go/rest"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	awscloudprovider "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/pricing"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/sdkhttp"
	"github.com/karp-autoscaler/karp/pkg/operator/awsfence"
	"github.com/karp-autoscaler/karp/pkg/options"
)

// loadAWSConfig loads the SDK's default config, then wraps the HTTP client
// it built (which honours AWS_CA_BUNDLE and the SDK's transport settings)
// with sdkhttp's. Passing sdkhttp's client to LoadDefaultConfig instead
// would make a custom CA bundle fail to load: the SDK only applies one to
// its own buildable client.
func loadAWSConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading AWS SDK config: %w", err)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = sdkhttp.NewClient()
	} else {
		cfg.HTTPClient = sdkhttp.Wrap(cfg.HTTPClient)
	}
	return cfg, nil
}

// awsClients builds the SDK clients from the default credential chain and
// region (the SDK's AWS_ENDPOINT_URL* variables apply), sending through
// sdkhttp's client.
func (o *Operator) awsClients(ctx context.Context) (awscloudprovider.Clients, error) {
	cfg, err := loadAWSConfig(ctx)
	if err != nil {
		return awscloudprovider.Clients{}, err
	}
	if cfg.Region == "" {
		return awscloudprovider.Clients{}, errors.New("no AWS region: set AWS_REGION (or the region of the AWS profile in use)")
	}
	if o.fence != nil {
		// A replica that may have lost its Lease changes nothing in AWS:
		// not only launches and terminations (the fenced cloud provider)
		// but the provider's own loops' clean-ups, tags and queue reads.
		cfg.APIOptions = append(cfg.APIOptions, awsfence.APIOption(o.fence))
	}
	return awscloudprovider.Clients{
		Region:  cfg.Region,
		EC2:     ec2.NewFromConfig(cfg),
		SSM:     ssm.NewFromConfig(cfg),
		IAM:     iam.NewFromConfig(cfg),
		Pricing: pricingapi.NewFromConfig(cfg, func(po *pricingapi.Options) { po.Region = pricing.PricingRegion(cfg.Region) }),
		EKS:     eks.NewFromConfig(cfg),
		SQS:     sqs.NewFromConfig(cfg),
		// Read only with --enable-zonal-shift.
		ARCZonalShift: arczonalshift.NewFromConfig(cfg),
	}, nil
}

// AWSDependencies are what the AWS provider is built from on this
// operator: its clients, recorder and clock, the process's connection to
// the API server, the AWS settings and the ReservedCapacity gate.
func (o *Operator) AWSDependencies(opts *options.Options, restConfig *rest.Config) awscloudprovider.Dependencies {
	return awscloudprovider.Dependencies{
		KubeClient:       o.KubeClient,
		APIReader:        o.Manager.GetAPIReader(),
		Recorder:         o.Recorder,
		Clock:            o.Clock,
		RestConfig:       restConfig,
		Options:          opts.AWS,
		ReservedCapacity: opts.FeatureGates.Enabled(options.FeatureReservedCapacity),
		Registerer:       crmetrics.Registry,
		ReplaceFirst:     opts.ReplaceFirst,
	}
}
