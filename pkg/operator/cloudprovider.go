package operator

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/operator/options"
)

// NewCloudProvider builds the provider the options name. The returned
// close func releases the provider's background work.
func NewCloudProvider(opts *options.Options, kubeClient client.Client) (cloudprovider.CloudProvider, func(), error) {
	switch opts.CloudProvider {
	case options.CloudProviderKWOK:
		var kwokOpts []kwok.Option
		if opts.InstanceTypesFilePath != "" {
			kwokOpts = append(kwokOpts, kwok.WithCatalogFile(opts.InstanceTypesFilePath))
		}
		offerings, err := options.ParseOfferings(opts.InsufficientCapacity)
		if err != nil {
			return nil, nil, err
		}
		for _, o := range offerings {
			kwokOpts = append(kwokOpts, kwok.WithInsufficientCapacity(cloudprovider.OfferingKey{
				InstanceType: o.InstanceType, Zone: o.Zone, CapacityType: o.CapacityType}))
		}
		cp, err := kwok.New(kubeClient, kwokOpts...)
		if err != nil {
			return nil, nil, fmt.Errorf("building kwok cloud provider: %w", err)
		}
		return cp, cp.Close, nil
	default:
		return nil, nil, fmt.Errorf("unknown cloud provider %q", opts.CloudProvider)
	}
}
