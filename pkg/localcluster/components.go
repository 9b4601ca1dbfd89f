package localcluster

import (
	"os"
	"path/filepath"
	"strconv"
)

// Component names, also the binary names in the bin directory and the log
// file names under logs/.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	Scheduler         = "kube-scheduler"
	ControllerManager = "kube-controller-manager"
	KWOK              = "kwok"
)

// componentOrder is the start order; they stop in reverse.
var componentOrder = []string{Etcd, APIServer, Scheduler, ControllerManager, KWOK}

// layout names the files inside a cluster directory.
type layout struct{ dir string }

func (l layout) pki(name string) string      { return filepath.Join(l.dir, "pki", name) }
func (l layout) pkiDir() string              { return filepath.Join(l.dir, "pki") }
func (l layout) logDir() string              { return filepath.Join(l.dir, "logs") }
func (l layout) log(component string) string { return filepath.Join(l.dir, "logs", component+".log") }
func (l layout) etcdData() string            { return filepath.Join(l.dir, "etcd") }
func (l layout) adminKubeconfig() string     { return filepath.Join(l.dir, "kubeconfig") }
func (l layout) kwokConfig() string          { return filepath.Join(l.dir, "kwok.yaml") }
func (l layout) auditPolicy() string         { return filepath.Join(l.dir, "audit-policy.yaml") }
func (l layout) state() string               { return filepath.Join(l.dir, stateFile) }
func (l layout) kubeconfig(component string) string {
	return filepath.Join(l.dir, component+".kubeconfig")
}
func (l layout) servingCertDir(component string) string {
	return filepath.Join(l.dir, "serving", component)
}

// component is one process of the control plane.
type component struct {
	name string
	args []string
}

// renderComponents returns the command lines of every component, in start
// order, for a cluster laid out in l listening on ports.
func renderComponents(l layout, ports Ports) []component {
	return []component{
		{Etcd, etcdArgs(l, ports)},
		{APIServer, apiServerArgs(l, ports)},
		{Scheduler, schedulerArgs(l, ports)},
		{ControllerManager, controllerManagerArgs(l, ports)},
		{KWOK, kwokArgs(l, ports)},
	}
}

func etcdArgs(l layout, p Ports) []string {
	client := "http://" + hostPort(p.EtcdClient)
	peer := "http://" + hostPort(p.EtcdPeer)
	return []string{
		"--name=karp",
		"--data-dir=" + l.etcdData(),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=karp=" + peer,
		"--initial-cluster-state=new",
		// The data is throwaway; skipping fsync makes everything faster.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	}
}

func apiServerArgs(l layout, p Ports) []string {
	args := []string{
		"--advertise-address=" + loopback,
		"--bind-address=" + loopback,
		"--secure-port=" + strconv.Itoa(p.APIServer),
		"--etcd-servers=http://" + hostPort(p.EtcdClient),
		"--tls-cert-file=" + l.pki(apiServerName+".crt"),
		"--tls-private-key-file=" + l.pki(apiServerName+".key"),
		"--client-ca-file=" + l.pki(caName+".crt"),
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + l.pki(saPubFile),
		"--service-account-signing-key-file=" + l.pki(saKeyFile),
		"--service-cluster-ip-range=" + serviceClusterIPRange,
		"--allow-privileged=true",
		// No server-side limit on requests in flight, as kwokctl's
		// --disable-qps-limits has it (with the client limits below).
		// Without priority and fairness the API server rejects every
		// request past 200 mutating ones in flight with a 429, and a
		// scale-up's burst hits that: in one 1,000-pod run the
		// ReplicaSet controller had 102 pod creates refused and created
		// the rest only after its retry backoff.
		"--enable-priority-and-fairness=false",
		"--max-requests-inflight=0",
		"--max-mutating-requests-inflight=0",
		// Endpoints may not hold a loopback address, so the API server
		// cannot publish itself behind the kubernetes Service; nothing in
		// a kwok cluster dials it, so skip the reconciler instead of
		// logging a failure every ten seconds.
		"--endpoint-reconciler-type=none",
	}
	// KARP_APISERVER_AUDIT=1 logs every request's verb, resource and
	// user to logs/audit.log, to see which component makes which
	// requests (it costs the API server CPU: a diagnostic, not a default).
	if os.Getenv("KARP_APISERVER_AUDIT") != "" {
		args = append(args, "--audit-policy-file="+l.auditPolicy(), "--audit-log-path="+filepath.Join(l.logDir(), "audit.log"),
			"--audit-log-format=json", "--audit-log-maxsize=0")
	}
	return args
}

// auditPolicy records each request once, when it completes, without
// bodies.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// delegatedAuthArgs let a component check the credentials of requests to
// its own secure port against the API server.
func delegatedAuthArgs(l layout, name string) []string {
	kubeconfig := l.kubeconfig(name)
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=" + loopback,
		"--cert-dir=" + l.servingCertDir(name),
		"--leader-elect=false",
	}
}

// unlimitedClientArgs lift the client-side rate limits of the
// kube-scheduler and kube-controller-manager, as kwokctl's
// --disable-qps-limits does. Their defaults (20 requests/s for the
// controller manager, 50 for the scheduler) are sized to share a
// production API server; on this single-user local cluster they would
// make the ReplicaSet controller create pods at 20 a second, so a
// 1,000-replica Deployment would take 50 s to exist before any
// autoscaler could act on it.
var unlimitedClientArgs = []string{"--kube-api-qps=5000", "--kube-api-burst=10000"}

func schedulerArgs(l layout, p Ports) []string {
	args := append(delegatedAuthArgs(l, Scheduler),
		"--secure-port="+strconv.Itoa(p.Scheduler),
	)
	// KARP_SCHEDULER_VERBOSITY raises the scheduler's log level (3 logs
	// every queue move of every pod), to see why pods wait.
	if v := os.Getenv("KARP_SCHEDULER_VERBOSITY"); v != "" {
		args = append(args, "--v="+v)
	}
	return append(args, unlimitedClientArgs...)
}

func controllerManagerArgs(l layout, p Ports) []string {
	args := append(delegatedAuthArgs(l, ControllerManager),
		"--secure-port="+strconv.Itoa(p.ControllerManager),
		// Every default controller, the node lifecycle controller among
		// them: it lifts node.kubernetes.io/not-ready once kwok reports a
		// node Ready.
		"--controllers=*",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+l.pki(saKeyFile),
		"--root-ca-file="+l.pki(caName+".crt"),
		"--cluster-signing-cert-file="+l.pki(caName+".crt"),
		"--cluster-signing-key-file="+l.pki(caName+".key"),
		"--service-cluster-ip-range="+serviceClusterIPRange,
	)
	return append(args, unlimitedClientArgs...)
}

func kwokArgs(l layout, p Ports) []string {
	return []string{
		"--kubeconfig=" + l.kubeconfig(KWOK),
		"--config=" + l.kwokConfig(),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KWOKNodeAnnotationKey + "=" + KWOKNodeAnnotationValue,
		"--node-lease-duration-seconds=40",
		"--server-address=" + hostPort(p.KWOK),
	}
}
