package operator

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	awscloudprovider "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	kwokinterruption "github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/controllers/interruption"
	kwoknodeclass "github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/controllers/nodeclass"
	kwoknodeclasshash "github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/controllers/nodeclass/hash"
	"github.com/karp-autoscaler/karp/pkg/controllers"
	"github.com/karp-autoscaler/karp/pkg/options"
)

// Provider is a built cloud provider with the controllers it needs next
// to the core ones (the kwok provider's KWOKNodeClass status and simulated
// interruptions; the AWS provider's EC2NodeClass status, refresh loops and
// launch template garbage collection).
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
		return newKWOKProvider(opts, op)
	case options.CloudProviderAWS:
		clients, err := op.awsClients(ctx)
		if err != nil {
			return nil, err
		}
		p, err := awscloudprovider.NewProvider(ctx, op.AWSDependencies(opts, restConfig), clients)
		if err != nil {
			return nil, err
		}
		provider := &Provider{CloudProvider: p.CloudProvider, Close: func() {}}
		for _, c := range p.Controllers {
			provider.Controllers = append(provider.Controllers, c)
		}
		return provider, nil
	default:
		return nil, fmt.Errorf("unknown cloud provider %q", opts.CloudProvider)
	}
}

// newKWOKProvider builds the kwok provider with its catalog and the
// offerings the flags make short of capacity, and its controllers.
func newKWOKProvider(opts *options.Options, op *Operator) (*Provider, error) {
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
	return &Provider{CloudProvider: cp, Close: cp.Close, Controllers: []controllers.Controller{
		// Sets each KWOKNodeClass's Ready condition.
		kwoknodeclass.NewController(op.KubeClient, op.Clock),
		// Re-stamps NodeClaims whose KWOKNodeClass hash is of an older
		// algorithm version, so the change is not read as drift.
		kwoknodeclasshash.NewController(op.KubeClient),
		// Replaces nodes on a spot interruption notice (forceful; the
		// replacement first when the notice allows), marking the
		// interrupted offering unavailable in the provider.
		kwokinterruption.NewController(op.KubeClient, cp, op.Clock, op.Recorder, kwokinterruption.WithReplaceFirst(opts.ReplaceFirst)),
	}}, nil
}
