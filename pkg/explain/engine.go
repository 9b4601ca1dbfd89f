package explain

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/controllers"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeoverlay"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	"github.com/karp-autoscaler/karp/pkg/options"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// Options say what the engine assumes about the controller it explains.
type Options struct {
	// InstanceTypes are what every NodePool offers (the kwok provider's
	// catalog by default; for a cluster on AWS, the same EC2 catalog
	// without the account's live prices and capacity).
	InstanceTypes []*scheduling.InstanceType
	// Settings are the controller's settings (nil: its defaults), such as
	// --cluster-limits.
	Settings *options.Options
	// Clock is "now" (nil: the real clock).
	Clock clock.Clock
	// FeatureGates are the controller's feature gates. Nil: the cluster's
	// NodeOverlays and CapacityBuffers are taken as asking for their
	// gates (as `karp simulate` takes manifests); with gates, exactly as a
	// controller run with them (NodeOverlay and CapacityBuffer default off).
	FeatureGates *options.FeatureGates
}

// gateOn reports whether the controller explained serves a gate's objects.
func (o Options) gateOn(name string) bool {
	return o.FeatureGates == nil || o.FeatureGates.Enabled(name)
}

// Engine answers why-questions about one cluster as karp's controllers
// see it: it reads the objects once, fills the controllers' cluster state
// and runs their decisions (the provisioner's solve and the disruption
// pass) without acting. Everything it reads goes through a client that
// refuses writes.
type Engine struct {
	client  client.Client
	clock   clock.Clock
	cluster *state.Cluster

	cloudProvider cloudprovider.CloudProvider
	provisioner   *provisioning.Provisioner
	disruption    *disruption.Controller

	nodePools  []karpv1.NodePool
	nodeClaims []karpv1.NodeClaim
	nodes      []corev1.Node
	pods       []corev1.Pod
	pdbs       []policyv1.PodDisruptionBudget
	// overlays is the NodeOverlays' evaluation (nil: none read, or the
	// gate is off); buffers the CapacityBuffers read.
	overlays *nodeoverlay.Evaluation
	buffers  []bufferRoom

	plan    *provisioning.Plan
	planned bool
	preview *disruption.Preview
	// poolSizes counts each NodePool's initialized nodes.
	poolSizes map[string]int
}

// New reads the cluster through reader (a client of a live API server,
// or NewObjectReader over a dump) and builds the engine.
func New(ctx context.Context, reader client.Reader, scheme *runtime.Scheme, opts Options) (*Engine, error) {
	if len(opts.InstanceTypes) == 0 {
		return nil, fmt.Errorf("the instance-type catalog is empty")
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	ro := readOnly{Reader: reader, scheme: scheme}
	e := &Engine{client: ro, clock: clk, cluster: state.NewCluster(clk, ro)}
	if err := e.read(ctx); err != nil {
		return nil, err
	}
	base, err := kwok.New(ro, kwok.WithInstanceTypes(opts.InstanceTypes))
	if err != nil {
		return nil, err
	}
	var cp cloudprovider.CloudProvider = base
	if opts.gateOn(options.FeatureNodeOverlay) {
		if cp, err = e.applyOverlays(ctx, base); err != nil {
			return nil, err
		}
	}
	e.cloudProvider = cp
	e.provisioner = provisioning.NewProvisioner(ro, cp, e.cluster, discard{}, clk, controllers.ProvisioningOptions(opts.Settings))
	e.disruption = disruption.NewController(ro, cp, e.cluster, discard{}, clk,
		controllers.DisruptionOptions(opts.Settings), controllers.SolverOptions(opts.Settings))
	if opts.gateOn(options.FeatureCapacityBuffer) {
		store, err := e.readBuffers(ctx)
		if err != nil {
			return nil, err
		}
		if store != nil {
			e.provisioner.WithBuffers(store)
			e.disruption.WithBuffers(store)
		}
	}
	return e, nil
}

// read lists what the controllers' state holds and records it.
func (e *Engine) read(ctx context.Context) error {
	var (
		nodePools  karpv1.NodePoolList
		nodeClaims karpv1.NodeClaimList
		nodes      corev1.NodeList
		pods       corev1.PodList
		daemonSets appsv1.DaemonSetList
		pdbs       policyv1.PodDisruptionBudgetList
	)
	for _, l := range []struct {
		kind string
		list client.ObjectList
	}{{"nodepools", &nodePools}, {"nodeclaims", &nodeClaims}, {"nodes", &nodes}, {"pods", &pods},
		{"daemonsets", &daemonSets}, {"poddisruptionbudgets", &pdbs}} {
		if err := e.client.List(ctx, l.list); err != nil {
			return fmt.Errorf("listing %s: %w", l.kind, err)
		}
	}
	e.nodePools, e.nodeClaims, e.nodes, e.pods, e.pdbs = nodePools.Items, nodeClaims.Items, nodes.Items, pods.Items, pdbs.Items
	slices.SortFunc(e.nodePools, func(a, b karpv1.NodePool) int { return strings.Compare(a.Name, b.Name) })
	for i := range e.nodePools {
		e.cluster.UpdateNodePool(&e.nodePools[i])
	}
	for i := range e.nodeClaims {
		e.cluster.UpdateNodeClaim(&e.nodeClaims[i])
	}
	for i := range e.nodes {
		e.cluster.UpdateNode(&e.nodes[i])
	}
	for i := range e.pods {
		e.cluster.UpdatePod(&e.pods[i])
	}
	for i := range daemonSets.Items {
		e.cluster.UpdateDaemonSet(&daemonSets.Items[i])
	}
	for i := range e.pdbs {
		e.cluster.UpdatePDB(&e.pdbs[i])
	}
	return nil
}

// provisioning is the provisioner's plan for the pending pods (nil when
// no pod needs a place), computed once.
func (e *Engine) provisioning(ctx context.Context) (*provisioning.Plan, error) {
	if !e.planned {
		plan, err := e.provisioner.Plan(ctx)
		if err != nil {
			return nil, err
		}
		if plan != nil {
			// Admit the new NodeClaims against the NodePools' and the
			// cluster's limits, as the provisioner does before it creates
			// them: a pod whose NodeClaim a limit drops is told so.
			simulation.AdmitLimits(*plan.Input, plan.Result)
		}
		e.plan, e.planned = plan, true
	}
	return e.plan, nil
}

// disruptionPreview is the disruption pass's decisions, computed once.
func (e *Engine) disruptionPreview(ctx context.Context) (*disruption.Preview, error) {
	if e.preview == nil {
		p, err := e.disruption.Preview(ctx)
		if err != nil {
			return nil, err
		}
		e.preview = p
	}
	return e.preview, nil
}

// discard drops the events the controllers' code would publish.
type discard struct{}

func (discard) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...interface{}) {
}

// instanceTypes are the NodePool's instance types as the controllers see
// them.
func (e *Engine) instanceTypes(ctx context.Context, nodePool string) []*scheduling.InstanceType {
	if np := e.nodePool(nodePool); np != nil {
		if types, err := e.cloudProvider.GetInstanceTypes(ctx, np); err == nil {
			return types
		}
	}
	return nil
}
