package operator

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/controllers"
	"github.com/karp-autoscaler/karp/pkg/options"
)

// Provider is a built cloud provider with the controllers it needs next
// to the core ones (the AWS provider's EC2NodeClass status, refresh
// loops and launch template garbage collection).
type Provider struct {
	CloudProvider cloudprovider.CloudProvider
	Controllers   []controllers.Controller
	// Close releases the provider's background work.
	Close func()
}

// NewCloudProvider builds the provider the options name.
func NewCloudProvider(ctx context.Context, opts *options.Options, op *Operator, restConfig *rest.Config) (*Provider, error) {
	switch opts.CloudProvider {
	case options.CloudProviderKWOK:
		var kwokOpts []kwok.Option
		if opts.InstanceTypesFilePath != "" {
			kwokOpts = append(kwokOpts, kwok.WithCatalogFile(opts.InstanceTypesFilePath))
		}
		offerings, err := options.ParseOfferings(opts.InsufficientCapacity)
		if err != nil {
			return nil, err
		}
		for _, o := range offerings {
			kwokOpts = append(kwokOpts, kwok.WithInsufficientCapacity(cloudprovider.OfferingKey{
				InstanceType: o.InstanceType, Zone: o.Zone, CapacityType: o.CapacityType}))
		}
		cp, err := kwok.New(op.KubeClient, kwokOpts...)
		if err != nil {
			return nil, fmt.Errorf("building kwok cloud provider: %w", err)
		}
		return &Provider{CloudProvider: cp, Close: cp.Close}, nil
	case options.CloudProviderAWS:
		return newAWSProvider(ctx, opts, op, restConfig)
	default:
		return nil, fmt.Errorf("unknown cloud provider %q", opts.CloudProvider)
	}
}
