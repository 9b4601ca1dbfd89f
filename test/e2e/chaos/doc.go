// Package chaos is karp's reliability suite: one long run on the full
// local control plane (etcd, kube-apiserver, kube-scheduler,
// kube-controller-manager, kwok) with karp-controller as processes (two
// replicas sharing one leader-election Lease), driving a mixed workload
// through scale-out, partial scale-down, drift, interruptions, expiry and a
// DaemonSet that no longer fits (the short presubmit run `make test` makes
// leaves out the last two), while faults are injected at moments a seeded
// RNG picks (KARP_CHAOS_SEED replays a run). At the end it checks
// karp's promises on the real cluster state and prints the run's figures.
// docs/reliability.md states the promises and the latest figures.
package chaos
