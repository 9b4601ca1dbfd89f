package operator

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karp-autoscaler/karp/pkg/controllers"
	"github.com/karp-autoscaler/karp/pkg/options"
)

// RestConfig loads the API server config: the kubeconfig at path when
// given, else the in-cluster config, else $KUBECONFIG or ~/.kube/config.
func RestConfig(path string) (*rest.Config, error) {
	if path == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return cfg, nil
}

// Run builds the operator and the cloud provider the options name,
// registers every controller and runs until ctx is done.
func Run(ctx context.Context, opts *options.Options) error {
	restConfig, err := RestConfig(opts.Kubeconfig)
	if err != nil {
		return err
	}
	op, err := New(ctx, restConfig, opts)
	if err != nil {
		return err
	}
	provider, err := NewCloudProvider(ctx, opts, op, restConfig)
	if err != nil {
		return err
	}
	defer provider.Close()
	cp := provider.CloudProvider
	if err := op.Register(ctx, append(controllers.NewControllers(op.Deps(cp)), provider.Controllers...)...); err != nil {
		return err
	}
	log.FromContext(ctx).Info("starting karp controller", "cloudProvider", cp.Name(), "host", restConfig.Host,
		"leaderElection", !opts.DisableLeaderElection, "metricsPort", opts.MetricsPort, "healthProbePort", opts.HealthProbePort)
	if opts.SchedulerConfig != nil {
		for profile, constraints := range opts.SchedulerConfig.Spread {
			if len(constraints) > 0 {
				log.FromContext(ctx).Info("applying the scheduler's default topology spread constraints", "profile", profile, "constraints", constraints)
			}
		}
	}
	// Settings accepted for compatibility that change nothing yet are
	// named, so nobody relies on them unknowingly.
	for _, setting := range opts.Inert() {
		log.FromContext(ctx).Info("warning: setting has no effect in karp", "setting", setting)
	}
	if err := op.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}
