// Package controllers lists the core controllers the karp controller
// process runs, whichever cloud provider it runs on. pkg/operator builds the
// Deps once and registers the list with its manager, followed by the
// controllers the provider brings (the kwok provider's KWOKNodeClass and
// simulated interruption controllers, the AWS provider's EC2NodeClass,
// refresh and SQS interruption controllers); only pkg/operator and cmd
// import this package.
//
// Each controller is its own package with one concern (STYLE.md §0, §2).
// Add a controller by appending it to NewControllers with a one-line
// comment saying what it owns.
package controllers

import (
	"context"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/overlay"
	"github.com/karp-autoscaler/karp/pkg/controllers/capacitybuffer"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/controllers/finalized"
	"github.com/karp-autoscaler/karp/pkg/controllers/metrics/status"
	"github.com/karp-autoscaler/karp/pkg/controllers/node/health"
	nodetermination "github.com/karp-autoscaler/karp/pkg/controllers/node/termination"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/consistency"
	nodeclaimdisruption "github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/disruption"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/expiration"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/podevents"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/termination"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeoverlay"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/counter"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/hash"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/readiness"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/registrationhealth"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/static"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/validation"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning/batchhold"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning/hint"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioningrequest"
	statecontrollers "github.com/karp-autoscaler/karp/pkg/controllers/state"
	"github.com/karp-autoscaler/karp/pkg/options"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
	"github.com/karp-autoscaler/karp/pkg/state/nodepoolhealth"
)

// Controller is one reconciler the manager runs.
type Controller interface {
	// Name is "<resource>.<concern>", e.g. "nodeclaim.lifecycle".
	Name() string
	// Register adds the controller and its watches to mgr.
	Register(ctx context.Context, mgr manager.Manager) error
}

// Deps are what controllers are built from. Every field is set by
// pkg/operator before NewControllers is called.
type Deps struct {
	// KubeClient reads from the manager's cache and writes to the API server.
	KubeClient client.Client
	// APIReader reads straight from the API server, for decisions a stale
	// cache must not drive (garbage collection).
	APIReader client.Reader
	// CloudProvider launches and terminates instances (already decorated
	// with metrics).
	CloudProvider cloudprovider.CloudProvider
	// Overlays is the NodeOverlay decorator inside CloudProvider, nil
	// unless the NodeOverlay feature gate is on; its store is fed by the
	// NodeOverlay controller.
	Overlays *overlay.CloudProvider
	// Clock is the time source; tests pass a fake clock.
	Clock clock.Clock
	// Recorder publishes Kubernetes events.
	Recorder events.EventRecorder
	// Options are the process settings.
	Options *options.Options
}

// NewControllers returns every controller, in registration order.
func NewControllers(deps Deps) []Controller {
	// One in-memory view of the cluster, fed by the state informers and
	// read by the provisioner.
	cluster := state.NewCluster(deps.Clock, deps.KubeClient)
	// Recent registration outcomes per NodePool, recorded by the lifecycle,
	// written to the NodePool and reset by the registrationhealth controller.
	registrationHealth := nodepoolhealth.NewState()
	provisioner := provisioning.NewProvisioner(deps.KubeClient, deps.CloudProvider, cluster, deps.Recorder, deps.Clock,
		provisioningOptions(deps.Options))
	// The CapacityBuffers to keep room for, resolved by the capacitybuffer
	// controller, read by the provisioner and disruption (gate on only).
	var capacityBuffers *buffers.Store
	if capacityBuffer(deps.Options) {
		capacityBuffers = buffers.NewStore()
		provisioner.WithBuffers(capacityBuffers)
	}
	disruptionController := disruption.NewController(deps.KubeClient, deps.CloudProvider, cluster, deps.Recorder, deps.Clock,
		disruptionOptions(deps.Options), solverOptions(provisioningOptions(deps.Options))).WithAPIReader(deps.APIReader)
	if capacityBuffers != nil {
		disruptionController.WithBuffers(capacityBuffers)
	}
	// The room booked for Provisioned ProvisioningRequests, held by the
	// provisioningrequest controller, kept by the provisioner and
	// disruption (gate on only).
	var bookings *buffers.Bookings
	if deps.Options != nil && deps.Options.FeatureGates.Enabled(options.FeatureProvisioningRequest) {
		bookings = buffers.NewBookings()
		provisioner.WithBookings(bookings)
		disruptionController.WithBookings(bookings)
	}
	statusRegistrar := status.NewRegistrar(crmetrics.Registry, deps.Clock, deps.CloudProvider, deps.Recorder)
	if capacityBuffers != nil {
		statusRegistrar.WithCapacityBuffers()
	}
	list := []Controller{
		// Launches, registers and initializes NodeClaims; deletes the ones
		// that cannot launch or never register.
		// Each registration or timeout feeds the NodePool's
		// NodeRegistrationHealthy.
		lifecycle.NewController(deps.KubeClient, deps.CloudProvider, deps.Clock, deps.Recorder).WithAPIReader(deps.APIReader).
			WithRegistrationHealth(registrationHealth),
		// Deletes a deleting NodeClaim's Node and instance, then lets it go.
		termination.NewController(deps.KubeClient, deps.CloudProvider, deps.Clock, deps.Recorder),
		// Drains a deleting Node through the Eviction API (its own queue,
		// which holds back evictions beyond a controller's rollout budget),
		// waits for volumes and the instance, then releases the Node.
		nodetermination.NewController(deps.KubeClient, deps.APIReader, deps.CloudProvider, deps.Clock, deps.Recorder,
			evictionQueue(deps)),
		// Deletes NodeClaims whose instance vanished and instances no
		// NodeClaim owns.
		garbagecollection.NewController(deps.KubeClient, deps.APIReader, deps.CloudProvider, deps.Clock),
		// Checks every ten minutes that a NodeClaim's Node has the capacity
		// it expected and that its drain is not held by a budget
		// (FailedConsistencyCheck, ConsistentStateFound).
		consistency.NewController(deps.KubeClient, deps.CloudProvider, deps.Clock, deps.Recorder),
		// Sums each NodePool's nodes into status.resources and status.nodes.
		counter.NewController(deps.KubeClient),
		// Mirrors the NodeClass's readiness into NodeClassReady.
		readiness.NewController(deps.KubeClient, deps.CloudProvider, deps.Clock),
		// The one writer of NodeRegistrationHealthy: copies the outcomes'
		// verdict, resets it when the NodePool or its NodeClass changes;
		// records status.nodeClassObservedGeneration.
		registrationhealth.NewController(deps.KubeClient, deps.CloudProvider, deps.Clock, registrationHealth).WithAPIReader(deps.APIReader),
		// Runs the runtime validation into ValidationSucceeded; says on a
		// static NodePool (spec.replicas) that the StaticCapacity gate is
		// off, when it is.
		validation.NewController(deps.KubeClient, deps.Clock).WithRecorder(deps.Recorder).
			WithStaticCapacity(staticCapacity(deps.Options)),
		// Stamps the template hash used for drift.
		hash.NewController(deps.KubeClient),
		// Batches pending pods, solves and creates NodeClaims (singleton).
		provisioner,
		// Triggers the provisioner for provisionable pods.
		provisioning.NewPodController(provisioner.Batcher(), cluster),
		// Triggers the provisioner for nodes being disrupted or deleted.
		provisioning.NewNodeController(provisioner.Batcher()),
		// Tells the kube-scheduler which node each nominated pod was
		// planned for, once that node registers.
		hint.NewController(deps.KubeClient, cluster),
		// Lifts the hold from a multi-node batch's nodes together, once
		// the batch is initialized.
		batchhold.NewController(deps.KubeClient, cluster, deps.Clock, provisioningOptions(deps.Options).BatchHoldDuration,
			provisioningOptions(deps.Options).NominationTTL()).WithAPIReader(deps.APIReader),
		// Registers the scheduler metrics.
		provisioning.NewMetricsRegistrar(crmetrics.Registry),
		// Registers the cluster state's node, pod, utilization and cost
		// metrics.
		statecontrollers.NewMetricsRegistrar(crmetrics.Registry, cluster),
		// Registers the NodeClaim, NodePool and Node (and, with the
		// CapacityBuffer gate, CapacityBuffer) status-condition and
		// termination metrics.
		statusRegistrar,
		// Deletes or replaces empty, drifted and underutilized nodes
		// within budgets (singleton), and says why the others stay.
		disruptionController,
	}
	if deps.Overlays != nil {
		// Validates NodeOverlays, finds conflicts between overlays of one
		// weight (ValidationSucceeded) and publishes the overlays the
		// provider decorator applies; until it has evaluated them as they
		// are, NodePools' instance types wait.
		list = append(list, nodeoverlay.NewController(deps.KubeClient, deps.Overlays.Unwrap(), deps.Overlays.Store(), deps.Clock))
	}
	if capacityBuffers != nil {
		// Resolves each CapacityBuffer's pod shape and replicas
		// (ReadyForProvisioning), publishes them for the provisioner and
		// disruption, and reports where they fit (Provisioning).
		list = append(list, capacitybuffer.NewController(deps.KubeClient, deps.APIReader, capacityBuffers, provisioner.Batcher(), deps.Clock))
	}
	if staticCapacity(deps.Options) {
		// Keeps each static NodePool at its replicas: launches NodeClaims
		// from its template, deletes the surplus (ReplicasServed).
		list = append(list, static.NewController(deps.KubeClient, deps.CloudProvider, cluster, deps.Clock, deps.Recorder,
			solverOptions(provisioningOptions(deps.Options))))
	}
	if deps.Options != nil && deps.Options.FeatureGates.Enabled(options.FeatureProvisioningRequest) {
		// Answers check-capacity ProvisioningRequests from the existing
		// nodes; launches an atomic request's NodeClaims all together or
		// none, and holds them for its pods for the booking period.
		list = append(list, provisioningrequest.NewController(deps.KubeClient, deps.APIReader, deps.CloudProvider, cluster,
			deps.Clock, deps.Recorder, provisioningrequest.Options{Solver: solverOptions(provisioningOptions(deps.Options)),
				ClusterLimits: deps.Options.ClusterLimits}).WithBookings(bookings),
			// Registers the ProvisioningRequest metrics.
			provisioningrequest.NewMetricsRegistrar(crmetrics.Registry))
	}
	// Records a Finalized event for each finalizer that leaves a NodeClaim,
	// a Node or a NodePool.
	for _, c := range finalized.NewControllers(deps.KubeClient, deps.Recorder) {
		list = append(list, c)
	}
	list = append(list, signalControllers(deps)...)
	// Feed the cluster state: one informer controller per kind.
	for _, c := range statecontrollers.NewControllers(deps.KubeClient, cluster) {
		list = append(list, c)
	}
	return list
}

// disruptionOptions maps the process flags onto the disruption
// controller's options.
func disruptionOptions(o *options.Options) disruption.Options {
	opts := disruption.DefaultOptions()
	if o == nil {
		return opts
	}
	if o.DisruptionValidationDelay >= 0 {
		opts.ValidationDelay = o.DisruptionValidationDelay
	}
	if o.DisruptionPollPeriod > 0 {
		opts.PollPeriod = o.DisruptionPollPeriod
	}
	if o.DisruptionReplacementTimeout > 0 {
		opts.QueueTimeout = o.DisruptionReplacementTimeout
	}
	opts.SpotToSpot = o.FeatureGates.Enabled(options.FeatureSpotToSpotConsolidation)
	opts.ProtectRunningJobs = o.ProtectRunningJobs
	opts.RespectRolloutBudget = o.RespectRolloutBudget
	opts.ReplaceFirst = o.ReplaceFirst
	opts.NominationTTL = provisioningOptions(o).NominationTTL()
	if o.SchedulerConfig != nil {
		opts.DefaultSpread = o.SchedulerConfig.Spread
	}
	return opts
}

// staticCapacity reports whether the StaticCapacity feature gate is on.
func staticCapacity(o *options.Options) bool {
	return o != nil && o.FeatureGates.Enabled(options.FeatureStaticCapacity)
}

// capacityBuffer reports whether the CapacityBuffer feature gate is on.
func capacityBuffer(o *options.Options) bool {
	return o != nil && o.FeatureGates.Enabled(options.FeatureCapacityBuffer)
}

// evictionQueue is the drain's eviction queue, respecting rollout budgets
// unless --respect-rollout-budget=false.
func evictionQueue(deps Deps) *nodetermination.Queue {
	q := nodetermination.NewQueue(deps.KubeClient, deps.Recorder)
	if deps.Options == nil || deps.Options.RespectRolloutBudget {
		q = q.WithRolloutBudgets(deps.KubeClient)
	}
	return q
}

// solverOptions are the solver settings the provisioner uses.
func solverOptions(p provisioning.Options) simulation.Options {
	return simulation.Options{PreferencePolicy: p.PreferencePolicy, MinValuesPolicy: p.MinValuesPolicy}
}

// provisioningOptions maps the process flags onto the provisioner's options.
func provisioningOptions(o *options.Options) provisioning.Options {
	opts := provisioning.DefaultOptions()
	if o == nil {
		return opts
	}
	if o.BatchIdleDuration > 0 {
		opts.BatchIdleDuration = o.BatchIdleDuration
	}
	if o.BatchMaxDuration > 0 {
		opts.BatchMaxDuration = o.BatchMaxDuration
	}
	opts.BatchHoldDuration = o.BatchHoldDuration
	if o.PreferencePolicy != "" {
		opts.PreferencePolicy = simulation.PreferencePolicy(o.PreferencePolicy)
	}
	if o.MinValuesPolicy != "" {
		opts.MinValuesPolicy = simulation.MinValuesPolicy(o.MinValuesPolicy)
	}
	if o.SchedulerConfig != nil {
		opts.DefaultSpread = o.SchedulerConfig.Spread
	}
	opts.ClusterLimits = o.ClusterLimits
	return opts
}

// signalControllers are the controllers that raise disruption signals or
// act on the forceful ones.
func signalControllers(deps Deps) []Controller {
	list := []Controller{
		// Sets Drifted and Consolidatable on NodeClaims.
		nodeclaimdisruption.NewController(deps.KubeClient, deps.CloudProvider, deps.Clock),
		// Records each NodeClaim's lastPodEventTime for consolidateAfter.
		podevents.NewController(deps.KubeClient, deps.Clock),
		// Deletes NodeClaims past expireAfter (forceful).
		expiration.NewController(deps.KubeClient, deps.CloudProvider, deps.Clock),
	}
	if deps.Options != nil && deps.Options.FeatureGates.Enabled(options.FeatureNodeRepair) {
		// Replaces nodes unhealthy past the provider's repair policies.
		list = append(list, health.NewController(deps.KubeClient, deps.CloudProvider, deps.Clock, deps.Recorder,
			health.WithToleration(deps.Options.NodeRepairToleration), health.WithReplaceFirst(deps.Options.ReplaceFirst)))
	}
	return list
}

// DisruptionOptions, ProvisioningOptions and SolverOptions map the process
// settings onto the controllers' options, for tools (`karp explain`) that
// run the controllers' decisions outside the manager.
func DisruptionOptions(o *options.Options) disruption.Options { return disruptionOptions(o) }

// ProvisioningOptions: see DisruptionOptions.
func ProvisioningOptions(o *options.Options) provisioning.Options { return provisioningOptions(o) }

// SolverOptions: see DisruptionOptions.
func SolverOptions(o *options.Options) simulation.Options {
	return solverOptions(provisioningOptions(o))
}
