// Package framework runs end-to-end suites against a full local cluster
// (etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok
// from pkg/localcluster), started once per test package:
//
//	func TestMain(m *testing.M) { framework.Main(m) }  // or os.Exit(framework.Run(m))
//
//	func TestSomething(t *testing.T) {
//		f := framework.Current(t)
//		node := framework.MakeKWOKNode("n1")
//		... f.Client.Create(ctx, node) ...
//	}
//
// Main builds missing control plane binaries (hack/build-tools.sh), starts
// the cluster in a temporary directory, runs the tests and stops the
// cluster whatever their outcome; if the test binary is killed, the
// components die with it (Pdeathsig). A component that dies during the run
// fails the package with the tail of its log.
//
// The helpers the suites share:
//
//   - karp itself: StartKarp runs karp-controller against the cluster
//     (built once per test binary, as ControllerBinary; KarpBinary builds the
//     karp CLI for its other subcommands);
//     FastDisruptionArgs make disruption act within seconds;
//     KARP_E2E_KEEP_LOGS=1 keeps every controller log.
//   - faults: Karp.Signal (SIGKILL, SIGSTOP, SIGCONT), Karp.Restart (the
//     same command again, plus flags for that run), WaitExit; two StartKarp
//     calls in one test are two replicas sharing the test's Lease, and
//     Leader names the one that leads (from each replica's
//     leader_election_master_status metric); KubeconfigAs runs a replica
//     as its own user, and AuditEvents reads the API server's audit log
//     when the package set AuditEnv; faultproxy puts latency and drops
//     between a client and the API server, KubeconfigVia points a
//     kubeconfig at it; Cluster.Restart and Cluster.Signal hit the control
//     plane's components.
//   - a test's pool: RunPool creates a namespace, KWOKNodeClass and
//     NodePool of one name, starts karp and, when the test ends, DeletePool
//     removes them and waits until karp has terminated the pool's nodes.
//   - workloads: Deployment, SpreadOverHosts, ApplyManifest, Example.
//   - reading the cluster: AvailablePods, PendingPods, PoolNodeClaims,
//     NodeClaimOfNode, Events, Describe (for failure messages).
//   - sampling while something happens: SampleAvailable (fewest available
//     pods, polled) and WatchDisrupting (most NodeClaims disrupted at once,
//     from a watch, so nothing is missed between polls).
//   - kwok nodes: MakeKWOKNode, SetKWOKNodeReady (the karp.sh/kwok-ready
//     annotation keeps a node Ready=False until removed).
package framework
