package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/chaos/badinput"
	"github.com/karp-autoscaler/karp/test/e2e/chaos/invariants"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/faultproxy"
)

// run is the state of one chaos run.
type run struct {
	t    *testing.T
	f    *framework.Framework
	cl   client.Client
	ctrl *controllers
	inj  *injector
	mon  *invariants.Monitor
	// monStopped is set once the monitor's report is taken.
	monStopped bool
	// proxy stands between the controllers and the kube-apiserver.
	proxy *faultproxy.Proxy
	// bad is the bad input applied during the drift phase.
	bad   []badinput.Result
	rng   *rand.Rand
	start time.Time
	// faults is how many faults each phase gets; window is how long
	// after a phase starts they may come.
	faults int
	window time.Duration
	// pinned are the do-not-disrupt pods once the workload first ran.
	pinned map[string]bool
	// phases records each phase's duration for the figures.
	phases []string
	// expiringEmptied is set once the expiring pool's workload is scaled
	// to zero.
	expiringEmptied bool
	// agentCreated is set once the daemonset phase made its DaemonSet.
	agentCreated bool
	// interrupted are the nodes given a spot interruption notice.
	interrupted []string
}

// TestChaos drives the workload through its phases while faults are
// injected, then checks karp's promises on the settled cluster and prints
// the run's figures.
func TestChaos(t *testing.T) {
	f := framework.Current(t)
	r := &run{t: t, f: f, cl: f.Client, rng: rand.New(rand.NewSource(seed + 1)), start: time.Now(),
		faults: 2, window: 30 * time.Second}
	switch {
	case soak:
		r.faults, r.window = 5, 90*time.Second
	case short:
		r.faults, r.window = 1, 20*time.Second
	}
	framework.Create(t, r.cl, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	for _, pool := range pools() {
		framework.Create(t, r.cl, test.MakeKWOKNodeClass(pool.Name).Obj())
		pool.Spec.Template.Spec.NodeClassRef = kwokv1alpha1.NodeClassReference(pool.Name)
		framework.Create(t, r.cl, pool)
	}
	mon, err := invariants.Start(t.Context(), f.Config, invariants.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.mon = mon
	t.Cleanup(func() {
		if !r.monStopped {
			r.mon.Stop()
		}
	})
	if r.proxy, err = faultproxy.Start(strings.TrimPrefix(f.Config.Host, "https://")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.proxy.Close() })
	r.ctrl = startControllers(t, f, framework.KubeconfigVia(t, f, r.proxy.Addr()))
	r.inj = newInjector(seed, r.faultKinds(), t.Logf)

	rounds := 1
	if soak {
		rounds = 3
	}
	for round := 1; round <= rounds; round++ {
		r.scaleOut(round)
		r.scaleDown(round)
		r.drift(round)
		r.interrupt()
		switch {
		case round > 1:
		case short:
			// The presubmit run leaves the expiry and DaemonSet phases
			// to the full run (test/e2e/signals and test/e2e/disruption
			// cover both without faults); its expiring nodes still
			// expire during the phases above.
			r.emptyExpiring()
		default:
			r.expiry()
			r.daemonSet()
		}
	}
	r.settle()
}

// wantPods is the workload's pod count at the current replica counts,
// leaving out the Deployments kept to skipPool.
func (r *run) wantPods(ctx context.Context, skipPool string) (int, error) {
	var list appsv1.DeploymentList
	if err := r.cl.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return 0, err
	}
	n := 0
	for _, d := range list.Items {
		if skipPool == "" || d.Spec.Template.Spec.NodeSelector[karpv1.NodePoolLabelKey] != skipPool {
			n += int(ptr.Deref(d.Spec.Replicas, 1))
		}
	}
	return n, nil
}

// settled is the condition every phase ends on: the cluster settled (see
// clusterState.unsettled) plus the phase's own condition. Until the
// expiring pool is emptied, its nodes keep expiring and being replaced,
// so it never settles: the check leaves it out until then.
func (r *run) settled(extra func(ctx context.Context, s *clusterState) string) func(ctx context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) {
		s, err := readState(ctx, r.cl)
		if err != nil {
			return false, err.Error()
		}
		skip := ""
		if !r.expiringEmptied {
			skip = poolExpiring
			s = s.without(skip)
		}
		want, err := r.wantPods(ctx, skip)
		if err != nil {
			return false, err.Error()
		}
		why := s.unsettled(want)
		if extra != nil {
			if e := extra(ctx, s); e != "" {
				why = append(why, e)
			}
		}
		return len(why) == 0, strings.Join(why, "; ")
	}
}

// phase runs act, injects the phase's faults while waiting for done, and
// waits for done again once the last fault is undone.
func (r *run) phase(name string, timeout time.Duration, act func(), done func(ctx context.Context) (bool, string)) {
	t := r.t
	start := time.Now()
	t.Logf("phase %s: start", name)
	act()
	faults := r.inj.during(t.Context(), name, r.faults, r.window)
	framework.Eventually(t, timeout, done)
	<-faults
	framework.Eventually(t, timeout, done)
	took := time.Since(start).Round(time.Second)
	r.phases = append(r.phases, fmt.Sprintf("%s=%s", name, took))
	t.Logf("phase %s: done in %s", name, took)
}

// scaleOut creates the workload (round 1) or scales it back up.
func (r *run) scaleOut(round int) {
	r.phase(fmt.Sprintf("scale-out-%d", round), 6*time.Minute, func() {
		for _, a := range apps() {
			if round > 1 {
				// The expiring pool stays empty after the first round,
				// so the final settle is not racing its nodes' expiry;
				// the split pool keeps its scaled-down workload (its
				// 1→N move is the first round's).
				if a.pool != poolExpiring && a.pool != poolSplit {
					r.scale(a.name, a.replicas)
				}
				continue
			}
			framework.Create(r.t, r.cl, a.deployment())
			if pdb := a.budget(); pdb != nil {
				framework.Create(r.t, r.cl, pdb)
			}
		}
	}, r.settled(func(ctx context.Context, s *clusterState) string {
		if round > 1 {
			return ""
		}
		return oneSplitNode(ctx, s)
	}))
	if r.pinned == nil {
		r.pinned = r.podNames("pinned")
	}
}

// scaleDown shrinks the big Deployments: consolidation deletes and
// replaces nodes. In the first round it also takes the split pool from
// five pods to three: the only cheaper placement of those is on two
// smaller nodes, and karp must replace its one node by them (1→N).
func (r *run) scaleDown(round int) {
	var split *splitMove
	if round == 1 {
		split = newSplitMove(r.t, r.cl)
	}
	r.phase(fmt.Sprintf("scale-down-%d", round), 5*time.Minute, func() {
		for _, a := range apps() {
			if a.scaledDown != a.replicas {
				r.scale(a.name, a.scaledDown)
			}
		}
	}, r.settled(func(ctx context.Context, s *clusterState) string {
		if split == nil {
			return ""
		}
		return split.observe(ctx, s)
	}))
	if split != nil {
		split.verify(r.t, r.cl)
	}
}

// drift changes the on-demand pool's template: every node of it not
// holding a do-not-disrupt pod is replaced.
func (r *run) drift(round int) {
	gen := fmt.Sprint(round + 1)
	r.phase("drift-"+gen, 6*time.Minute, func() {
		pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: poolOnDemand}}
		framework.Mutate(r.t, r.cl, pool, func() { pool.Spec.Template.ObjectMeta.Labels[generationLabel] = gen })
		if round == 1 {
			r.applyBadInput()
		}
	}, r.settled(func(ctx context.Context, s *clusterState) string {
		holdsPinned := map[string]bool{}
		for _, p := range s.pods {
			if p.Labels["app"] == "pinned" {
				holdsPinned[p.Spec.NodeName] = true
			}
		}
		var old []string
		for _, nc := range s.claims {
			if nc.Labels[karpv1.NodePoolLabelKey] == poolOnDemand && nc.Labels[generationLabel] != gen && !holdsPinned[nc.Status.NodeName] {
				old = append(old, nc.Name)
			}
		}
		if len(old) > 0 {
			return fmt.Sprintf("%d drifted NodeClaims not replaced yet (%s)", len(old), sample(old))
		}
		return ""
	}))
}

// interrupt delivers spot interruption notices (`karp interrupt`) to two
// spot nodes the run's RNG picks; they must be replaced.
func (r *run) interrupt() {
	var victims []string
	r.phase("interruption", 5*time.Minute, func() {
		var nodes corev1.NodeList
		if err := r.cl.List(r.t.Context(), &nodes, client.MatchingLabels{karpv1.NodePoolLabelKey: poolSpot}); err != nil {
			r.t.Fatal(err)
		}
		var names []string
		for _, n := range nodes.Items {
			names = append(names, n.Name)
		}
		sort.Strings(names)
		r.rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		victims = names[:min(2, len(names))]
		for _, node := range victims {
			r.mon.Involuntary(node)
			out, err := exec.Command(framework.KarpBinary(r.t), "interrupt", "--kubeconfig", r.f.Cluster.Kubeconfig, node).CombinedOutput()
			if err != nil {
				r.t.Fatalf("karp interrupt %s: %v\n%s", node, err, out)
			}
		}
		r.interrupted = append(r.interrupted, victims...)
	}, r.settled(func(ctx context.Context, _ *clusterState) string {
		for _, node := range victims {
			if err := r.cl.Get(ctx, types.NamespacedName{Name: node}, &corev1.Node{}); !apierrors.IsNotFound(err) {
				return "interrupted node " + node + " still exists"
			}
		}
		return ""
	}))
}

// expiry waits until every node of the expiring pool that existed when it
// started has expired and been replaced, and every pod of the workload
// runs. It does not wait for a fully settled cluster: the replacements
// expire in their turn, so the pool never stops changing while it has
// pods. (The daemonset phase scales its workload to zero, and ends
// settled, the pool's nodes gone.)
func (r *run) expiry() {
	original := map[string]bool{}
	r.phase("expiry", 6*time.Minute, func() {
		for _, nc := range framework.PoolNodeClaims(r.t.Context(), r.cl, poolExpiring) {
			original[nc.Name] = true
		}
	}, func(ctx context.Context) (bool, string) {
		s, err := readState(ctx, r.cl)
		if err != nil {
			return false, err.Error()
		}
		var left, notRunning []string
		for _, nc := range s.claims {
			if original[nc.Name] {
				left = append(left, nc.Name)
			}
		}
		for i := range s.pods {
			if !framework.Available(&s.pods[i]) {
				notRunning = append(notRunning, s.pods[i].Name)
			}
		}
		return len(left) == 0 && len(notRunning) == 0,
			fmt.Sprintf("%d NodeClaims not expired yet (%s); %d pods not Running (%s)", len(left), sample(left), len(notRunning), sample(notRunning))
	})
}

// daemonSet adds a DaemonSet that does not fit the tainted pool's full
// nodes: karp replaces them by nodes that fit it too. It also scales the
// expiring pool's workload to zero: its nodes must go as empty. The
// replacements go one at a time within the pool's Drifted budget, each
// waiting for its node to initialize and the old one to drain, under the
// phase's fault: on a shared 2-core CI machine the phase has taken 4–6
// minutes, so it is given 9.
func (r *run) daemonSet() {
	r.phase("daemonset", 9*time.Minute, func() {
		r.scale("ephemeral", 0)
		r.expiringEmptied = true
		framework.Create(r.t, r.cl, agent())
		r.agentCreated = true
	},
		r.settled(func(ctx context.Context, s *clusterState) string {
			withAgent := map[string]bool{}
			for _, p := range s.pods {
				if p.Labels["app"] == "agent" && framework.Available(&p) {
					withAgent[p.Spec.NodeName] = true
				}
			}
			var without []string
			for _, n := range s.nodes {
				if n.Labels[karpv1.NodePoolLabelKey] == poolTainted && !withAgent[n.Name] {
					without = append(without, n.Name)
				}
			}
			if len(without) > 0 {
				return fmt.Sprintf("%d tainted-pool nodes without a running agent (%s)", len(without), sample(without))
			}
			return ""
		}))
}

// emptyExpiring scales the expiring pool's workload to zero: its nodes
// must go as empty, and the cluster then settles.
func (r *run) emptyExpiring() {
	r.phase("empty-expiring", 5*time.Minute, func() {
		r.scale("ephemeral", 0)
		r.expiringEmptied = true
	}, r.settled(nil))
}

// badNamespace holds the bad input's pods, apart from the workload.
const badNamespace = "chaos-bad"

// applyBadInput applies every bad-input case while the cluster drifts.
func (r *run) applyBadInput() {
	framework.Create(r.t, r.cl, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: badNamespace}})
	// The API server refuses a pod before kube-controller-manager has
	// made its namespace's default ServiceAccount ("error looking up
	// service account"), which would hide the rejection a bad pod is
	// there to get.
	framework.Eventually(r.t, time.Minute, func(ctx context.Context) (bool, string) {
		err := r.cl.Get(ctx, types.NamespacedName{Namespace: badNamespace, Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, fmt.Sprintf("ServiceAccount %s/default: %v", badNamespace, err)
	})
	r.bad = badinput.Run(r.t.Context(), r.cl, badNamespace)
}

// checkBadInput waits for karp's answer to each bad input, then deletes
// what the API server accepted.
func (r *run) checkBadInput() {
	if r.bad == nil {
		return
	}
	ctx, cancel := context.WithTimeout(r.t.Context(), 3*time.Minute)
	defer cancel()
	if err := badinput.Verify(ctx, r.cl, r.bad); err != nil {
		framework.Errorf(r.t, "bad input: %v", err)
	}
	if err := badinput.Cleanup(r.t.Context(), r.cl, r.bad); err != nil {
		framework.Errorf(r.t, "deleting the bad input: %v", err)
	}
	r.t.Logf("bad input: %d cases answered", len(r.bad))
}

// settle waits for the cluster to settle after the last fault, checks the
// promises and prints the figures.
func (r *run) settle() {
	t := r.t
	r.checkBadInput()
	framework.Eventually(t, 5*time.Minute, r.settled(nil))
	settledAt := time.Now()
	lastFault := r.inj.lastEnd()
	// kube-controller-manager's DaemonSet controller has no handler for
	// deleted Nodes: a pod it made for a node karp has since replaced
	// stays Pending until the DaemonSet next syncs. Touch the DaemonSet
	// (the full run's daemonset phase makes it) so it does.
	if r.agentCreated {
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "agent"}}
		framework.Mutate(t, r.cl, ds, func() {
			if ds.Annotations == nil {
				ds.Annotations = map[string]string{}
			}
			ds.Annotations["chaos.karp.sh/settled-at"] = settledAt.UTC().Format(time.RFC3339)
		})
	}
	violations, err := invariants.WaitSettled(t.Context(), r.cl, invariants.KWOKInstances{Client: r.cl},
		invariants.SettleOptions{Namespaces: []string{namespace}}, time.Second, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	report := r.mon.Stop()
	r.monStopped = true
	report.Add(violations...)
	for _, v := range report.Violations {
		framework.Errorf(t, "violation: %s", v)
	}
	s, err := readState(t.Context(), r.cl)
	if err != nil {
		t.Fatal(err)
	}

	// Do-not-disrupt pods are never evicted: the same pods run as when
	// the workload first ran (none of their nodes is interrupted).
	var replaced []string
	for _, p := range s.pods {
		if p.Labels["app"] == "pinned" && !r.pinned[p.Name] {
			replaced = append(replaced, p.Name)
		}
	}
	if len(replaced) > 0 {
		framework.Errorf(t, "do-not-disrupt pods were replaced: %s are new", sample(replaced))
	}

	liveByPool, err := pricePerHourByPool(s.claims)
	if err != nil {
		t.Fatal(err)
	}
	live := 0.0
	for _, p := range liveByPool {
		live += p
	}
	sim := simulatePricePerHour(t, r.finalWorkload())
	if sim.pending > 0 {
		framework.Errorf(t, "karp simulate cannot place %d pods of the final workload", sim.pending)
	}
	if live > costFactor*sim.total {
		framework.Errorf(t, "the cluster ends at $%.4f/hour, more than %.1f × karp simulate's $%.4f/hour", live, costFactor, sim.total)
	}
	var failed []string
	for _, f := range r.inj.injected() {
		if f.err != nil {
			failed = append(failed, fmt.Sprintf("%s in %s: %v", f.kind, f.phase, f.err))
		}
	}
	if len(failed) > 0 {
		framework.Errorf(t, "faults that could not be injected: %s", strings.Join(failed, "; "))
	}
	notRunning := report.Count(invariants.KindPodNotRunning)
	t.Logf("chaos figures: seed=%d run=%s duration=%s phases: %s", seed, runKind(), time.Since(r.start).Round(time.Second), strings.Join(r.phases, " "))
	t.Logf("chaos figures: faults %d (%s); replicas that exited on their own and were restarted: %d", len(r.inj.injected()), r.inj.byKind(), r.ctrl.restarts())
	t.Logf("chaos figures: evictions=%d disruptions=%d unobserved=%d pdb-violations=%d do-not-disrupt-disrupted=%d leaked=%d duplicate=%d shared=%d missing=%d stuck-taints=%d empty-nodes=%d pods-not-running=%d excused-on-interrupted=%d",
		report.Evictions, len(report.Disruptions), report.Unobserved, report.Count(invariants.KindPDBViolation), report.Count(invariants.KindDoNotDisrupt),
		report.Count(invariants.KindLeakedInstance), report.Count(invariants.KindDuplicateInstance), report.Count(invariants.KindSharedInstance),
		report.Count(invariants.KindMissingInstance), report.Count(invariants.KindStuckTaint), report.Count(invariants.KindEmptyNode), notRunning, len(report.Excused))
	t.Logf("chaos figures: settled %s after the last fault; nodeclaims %d; pods %d; interrupted %v; bad-input cases %d",
		settledAt.Sub(lastFault).Round(time.Second), len(s.claims), len(s.pods), r.interrupted, len(r.bad))
	t.Logf("chaos figures: $/hour %.4f, karp simulate %.4f (ratio %.2f, allowed %.1f)", live, sim.total, live/sim.total, costFactor)
	t.Logf("chaos figures: $/hour by NodePool, karp/simulate (ratio, gap): %s", costByPool(liveByPool, sim.byPool))
}

// finalWorkload is what `karp simulate` is given: the NodePools as they
// are now, their KWOKNodeClasses, the Deployments at their current
// replicas and the DaemonSet.
func (r *run) finalWorkload() []runtime.Object {
	ctx := r.t.Context()
	var objects []runtime.Object
	for _, p := range pools() {
		live := &karpv1.NodePool{}
		if err := r.cl.Get(ctx, types.NamespacedName{Name: p.Name}, live); err != nil {
			r.t.Fatal(err)
		}
		p.Spec = live.Spec
		objects = append(objects, test.MakeKWOKNodeClass(p.Name).Obj(), p)
	}
	for _, a := range apps() {
		d := a.deployment()
		live := &appsv1.Deployment{}
		if err := r.cl.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
			r.t.Fatal(err)
		}
		if ptr.Deref(live.Spec.Replicas, 0) == 0 {
			continue
		}
		d.Spec.Replicas = live.Spec.Replicas
		objects = append(objects, d)
	}
	var ds appsv1.DaemonSet
	if err := r.cl.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "agent"}, &ds); err == nil {
		objects = append(objects, agent())
	}
	return objects
}

// scale sets the Deployment's replicas.
func (r *run) scale(name string, replicas int32) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	framework.Mutate(r.t, r.cl, d, func() { d.Spec.Replicas = ptr.To(replicas) })
}

// podNames are the names of the app's pods.
func (r *run) podNames(app string) map[string]bool {
	var list corev1.PodList
	if err := r.cl.List(r.t.Context(), &list, client.InNamespace(namespace), client.MatchingLabels{"app": app}); err != nil {
		r.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range list.Items {
		out[p.Name] = true
	}
	return out
}

// faultKinds are the faults this run can inject; each undoes itself
// (restarts what it killed, resumes what it froze) before it returns.
func (r *run) faultKinds() []faultKind {
	restart := func(component string) faultKind {
		return faultKind{name: "restart-" + component, inject: func(ctx context.Context) error {
			return r.f.Cluster.Restart(ctx, component)
		}}
	}
	return []faultKind{
		{name: "kill-leader", inject: func(ctx context.Context) error {
			k, err := r.ctrl.leader(ctx)
			if err != nil {
				return err
			}
			return r.ctrl.kill(nil, k)
		}},
		{name: "kill-both", inject: func(context.Context) error {
			return r.ctrl.kill(nil, r.ctrl.replicas...)
		}},
		{name: "stop-leader", inject: r.stopLeader},
		{name: "insufficient-capacity", inject: r.insufficientCapacity},
		restart(localcluster.APIServer),
		restart(localcluster.Etcd),
		restart(localcluster.KWOK),
		{name: "drop-api", inject: func(ctx context.Context) error {
			r.proxy.Drop(10 * time.Second)
			return sleep(ctx, 10*time.Second)
		}},
		{name: "slow-api", inject: func(ctx context.Context) error {
			r.proxy.SetLatency(300 * time.Millisecond)
			defer r.proxy.SetLatency(0)
			return sleep(ctx, 20*time.Second)
		}},
	}
}

// stopLeader freezes the leader (SIGSTOP) past its 15s Lease, so the
// standby takes over while the old leader still believes it leads, then
// resumes it (SIGCONT): it must notice it lost the Lease and stop acting.
// It exits, and the supervisor starts it again as the standby.
func (r *run) stopLeader(ctx context.Context) error {
	k, err := r.ctrl.leader(ctx)
	if err != nil {
		return err
	}
	return r.ctrl.freeze(ctx, k, 25*time.Second)
}

// insufficientCapacity restarts the standby with
// --kwok-insufficient-capacity naming the three offerings the cluster
// uses most, then kills the leader so the standby leads: its launches of
// those offerings fail and it must fall back to others. The flag lasts
// until that replica is next restarted.
func (r *run) insufficientCapacity(ctx context.Context) error {
	counts := map[string]int{}
	var claims karpv1.NodeClaimList
	if err := r.cl.List(ctx, &claims); err != nil {
		return err
	}
	for _, nc := range claims.Items {
		counts[nc.Labels[corev1.LabelInstanceTypeStable]+"/"+nc.Labels[corev1.LabelTopologyZone]+"/"+nc.Labels[karpv1.CapacityTypeLabelKey]]++
	}
	var offerings []string
	for o := range counts {
		offerings = append(offerings, o)
	}
	sort.Slice(offerings, func(i, j int) bool {
		if counts[offerings[i]] != counts[offerings[j]] {
			return counts[offerings[i]] > counts[offerings[j]]
		}
		return offerings[i] < offerings[j]
	})
	if len(offerings) == 0 {
		return nil
	}
	offerings = offerings[:min(3, len(offerings))]
	leader, err := r.ctrl.leader(ctx)
	if err != nil {
		return err
	}
	if err := r.ctrl.kill([]string{"--kwok-insufficient-capacity=" + strings.Join(offerings, ",")}, r.ctrl.standby(leader)); err != nil {
		return err
	}
	return r.ctrl.kill(nil, leader)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
