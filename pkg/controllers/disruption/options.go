package disruption

import (
	"time"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// Options tune the disruption controller.
type Options struct {
	// PollPeriod is how often the loop runs when it did nothing (10s).
	PollPeriod time.Duration
	// ValidationDelay is how long a consolidation decision waits before it
	// is re-checked and acted on (upstream's 15s).
	ValidationDelay time.Duration
	// QueueTimeout is how long a command may wait for its replacements to
	// initialize before it is rolled back (upstream's 10m minimum).
	QueueTimeout time.Duration
	// MultiNodeTimeout and SingleNodeTimeout bound the consolidation
	// searches (upstream's 1m and 3m).
	MultiNodeTimeout  time.Duration
	SingleNodeTimeout time.Duration
	// SingleNodeBatch is how many candidates single-node consolidation
	// simulates per pass at most (0: all); the next pass continues.
	SingleNodeBatch int
	// MaxMultiNodeCandidates bounds the multi-node search (upstream's 100).
	MaxMultiNodeCandidates int
	// SpotToSpot allows replacing spot nodes with cheaper spot nodes.
	SpotToSpot bool
	// NominationTTL is how long pods of a command stay nominated to its
	// replacements between queue passes.
	NominationTTL time.Duration
	// DefaultSpread are the scheduler's default topology spread
	// constraints (--scheduler-config): consolidation moves pods that
	// declare none as the scheduler will place them.
	DefaultSpread scheduling.SpreadDefaults
	// ProtectRunningJobs makes a Running pod of a Job block consolidation
	// and drift of its node as karpenter.sh/do-not-disrupt: "true" does,
	// until it ends (karp's default; upstream has no such rule). The pod
	// opts out with karpenter.sh/do-not-disrupt: "false".
	ProtectRunningJobs bool
	// RespectRolloutBudget makes a pod no PDB selects block its node while
	// its eviction would make more of its controller's replicas
	// unavailable than the controller's rollout budget (maxUnavailable)
	// allows, as a PDB allowing no disruption does, and keeps a multi-node
	// command within each controller's budget (karp's default; upstream
	// honours PDBs only).
	RespectRolloutBudget bool
	// ReplaceFirst launches an expiring node's replacement capacity
	// ahead of its expiry and drains it once that is initialized (the
	// Expiration method; karp's default). Off, a node is deleted at expiry
	// and its pods wait for new capacity, as upstream.
	ReplaceFirst bool
}

// DefaultOptions are upstream's settings, and karp's protection of
// running Jobs, respect of rollout budgets and replacement before expiry.
func DefaultOptions() Options {
	return Options{PollPeriod: 10 * time.Second, ValidationDelay: 15 * time.Second, QueueTimeout: 10 * time.Minute,
		MultiNodeTimeout: time.Minute, SingleNodeTimeout: 3 * time.Minute, MaxMultiNodeCandidates: 100, SingleNodeBatch: 25,
		NominationTTL: 20 * time.Second, ProtectRunningJobs: true, RespectRolloutBudget: true, ReplaceFirst: true}
}
