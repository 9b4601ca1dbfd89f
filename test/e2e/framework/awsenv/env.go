package awsenv

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karp-autoscaler/karp/pkg/test/awssim"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// Timeouts for waits on the cluster.
const (
	// ScaleTimeout bounds a scale-up: pods Available, a class Ready, a
	// node replaced.
	ScaleTimeout = 3 * time.Minute
	// CleanupTimeout bounds each step of a test's clean-up.
	CleanupTimeout = 3 * time.Minute
)

// Env is a simulated AWS account, its kubelets and the karp controller
// using it, on the local cluster of the test package.
type Env struct {
	// Framework is the package's local cluster.
	Framework *framework.Framework
	// Client is the cluster's admin client (Framework.Client).
	Client client.Client
	// Sim is the simulated account: its EC2, SSM, SQS, IAM and the rest,
	// for a test to read and to inject faults and events into.
	Sim *awssim.Sim
	// Karp is the controller process, once StartKarp has run.
	Karp *framework.Karp
}

// Start builds and serves a simulated AWS for the local cluster, runs its
// kubelets (registering a Node a second after launch) and starts the karp
// controller on it with fast disruption and extraArgs; all stop when t
// ends.
func Start(t testing.TB, extraArgs ...string) *Env {
	t.Helper()
	e := New(t)
	e.StartKarp(t, extraArgs...)
	return e
}

// New builds and serves a simulated AWS for the local cluster and runs its
// kubelets, without a controller yet: StartKarp starts it, so that a test
// can set the account up (faults at start-up) first. All stop when t ends.
func New(t testing.TB) *Env {
	t.Helper()
	f := framework.Current(t)
	sim, err := awssim.New(t.Context(), awssim.Options{
		KubernetesVersion: kubernetesVersion(t, f),
		ClusterEndpoint:   f.Config.Host,
		CABundle:          base64.StdEncoding.EncodeToString(f.Config.CAData),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Serve(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	// Runs after the kubelets stop: no Node of this account outlives it
	// (one registered while its NodeClaim was already going would).
	t.Cleanup(func() { deleteNodesOf(f.Client, sim) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	kubelet := sim.NewKubelet(f.Client, awssim.KubeletOptions{RegistrationDelay: time.Second})
	logger := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, "awssim.kubelet", prefix, args) }, funcr.Options{})
	go func() { defer close(done); _ = kubelet.Run(log.IntoContext(ctx, logger)) }()
	t.Cleanup(func() { cancel(); <-done })
	return &Env{Framework: f, Client: f.Client, Sim: sim}
}

// StartKarp starts the karp controller on the simulated AWS with fast
// disruption and extraArgs; it stops when t ends. To kill and start it
// again, Karp.Stop then Karp.Restart: the same process, so what a test
// registered to delete on clean-up still runs before it stops.
func (e *Env) StartKarp(t testing.TB, extraArgs ...string) {
	t.Helper()
	args := append(append(e.Sim.ControllerArgs(), framework.FastDisruptionArgs...), extraArgs...)
	e.Karp = framework.StartKarpEnv(t, e.Framework, e.Sim.Env(), args...)
}

// kubernetesVersion is the local API server's "major.minor", the version
// the simulated SSM publishes AMIs for.
func kubernetesVersion(t testing.TB, f *framework.Framework) string {
	t.Helper()
	disco, err := discovery.NewDiscoveryClientForConfig(f.Config)
	if err != nil {
		t.Fatal(err)
	}
	info, err := disco.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	return info.Major + "." + strings.TrimSuffix(info.Minor, "+")
}

// deleteNodesOf deletes the Nodes of the account's instances, finalizers
// and all.
func deleteNodesOf(cl client.Client, sim *awssim.Sim) {
	ids := map[string]bool{}
	for _, inst := range sim.Instances() {
		ids[aws.ToString(inst.InstanceId)] = true
	}
	var nodes corev1.NodeList
	if err := cl.List(context.Background(), &nodes); err != nil {
		return
	}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if strings.HasPrefix(node.Spec.ProviderID, "aws:///") && ids[InstanceID(node.Spec.ProviderID)] {
			node.Finalizers = nil
			_ = cl.Update(context.Background(), node)
			_ = cl.Delete(context.Background(), node)
		}
	}
}
