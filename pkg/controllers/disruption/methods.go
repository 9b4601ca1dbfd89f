package disruption

import "sigs.k8s.io/controller-runtime/pkg/client"

// NewMethods lists the disruption methods in the order the controller
// tries them; the first to return a command wins the pass. Each gets what
// it needs at construction; the pass's world and the simulator come as
// arguments of each call.
func NewMethods(opts Options, kubeClient client.Client, daemonSets daemonSetLister, events *recorder) []Method {
	var methods []Method
	if opts.ReplaceFirst {
		// Replaces interrupted and unhealthy nodes whose NodeClaim carries a
		// replace-by deadline, then nodes about to expire, ahead of their
		// deadlines, one per pass, at any price, regardless of budgets (the
		// deletions they precede are forceful).
		methods = append(methods, NewReplaceByMethods()...)
		methods = append(methods, &Expiration{pollPeriod: opts.PollPeriod, queueTimeout: opts.QueueTimeout})
	}
	return append(methods,
		// Deletes every empty node whose consolidateAfter elapsed, within
		// budgets, in one command.
		&Emptiness{},
		// Replaces spot nodes the cloud recommended rebalancing (opt-in per
		// NodePool), one at a time, at any price, within the Drifted budgets.
		&SpotRebalance{},
		// Replaces drifted nodes one at a time, at any price.
		&Drift{},
		// Replaces nodes a DaemonSet pod cannot fit for lack of resources
		// with capacity sized for their pods plus every DaemonSet, at any
		// price, within the Drifted budgets.
		&DaemonSetFit{kubeClient: kubeClient, daemonSets: daemonSets, events: events},
		// Deletes or replaces several nodes at once with cheaper capacity
		// (bounded prefix search).
		&MultiNodeConsolidation{consolidation{opts: opts}},
		// Deletes or replaces one node with cheaper capacity, possibly by
		// several smaller nodes.
		&SingleNodeConsolidation{consolidation: consolidation{opts: opts}},
	)
}
