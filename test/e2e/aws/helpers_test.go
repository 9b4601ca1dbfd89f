package aws_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// Timeouts for waits on the cluster.
const (
	scaleTimeout   = 3 * time.Minute
	driftTimeout   = 5 * time.Minute
	cleanupTimeout = 3 * time.Minute
)

// awsEnv is one test's simulated AWS account, its kubelets and the karp
// controller using it.
type awsEnv struct {
	f           *framework.Framework
	cl          client.Client
	sim         *awssim.Sim
	karp        *framework.Karp
	metricsPort int
	args        []string
	// cleanup deletes the test's objects (deleteOnCleanup); it must run
	// while a controller runs, so restartKarp registers it again.
	cleanup func()
}

var (
	versionOnce sync.Once
	version     string
	versionErr  error
)

// kubernetesVersion is the local API server's "major.minor", the version
// the simulated SSM publishes AMIs for.
func kubernetesVersion(t *testing.T, f *framework.Framework) string {
	versionOnce.Do(func() {
		disco, err := discovery.NewDiscoveryClientForConfig(f.Config)
		if err != nil {
			versionErr = err
			return
		}
		info, err := disco.ServerVersion()
		if err != nil {
			versionErr = err
			return
		}
		version = info.Major + "." + strings.TrimSuffix(info.Minor, "+")
	})
	if versionErr != nil {
		t.Fatal(versionErr)
	}
	return version
}

// startAWS builds and serves a simulated AWS for the local cluster, runs
// its kubelets (registering a Node a second after launch) and starts the
// karp controller on it with fast disruption and extraArgs.
func startAWS(t *testing.T, extraArgs ...string) *awsEnv {
	t.Helper()
	e := newAWS(t)
	e.start(t, extraArgs...)
	return e
}

// newAWS builds and serves a simulated AWS for the local cluster and runs
// its kubelets; start starts the controller.
func newAWS(t *testing.T) *awsEnv {
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
	return &awsEnv{f: f, cl: f.Client, sim: sim, metricsPort: freePort(t)}
}

// deleteNodesOf deletes the Nodes of the account's instances.
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
		if ids[node.Spec.ProviderID[strings.LastIndex(node.Spec.ProviderID, "/")+1:]] && strings.HasPrefix(node.Spec.ProviderID, "aws:///") {
			node.Finalizers = nil
			_ = cl.Update(context.Background(), node)
			_ = cl.Delete(context.Background(), node)
		}
	}
}

// start starts the karp controller on the simulated AWS with fast
// disruption, its metrics on a free port, and extraArgs.
func (e *awsEnv) start(t *testing.T, extraArgs ...string) {
	t.Helper()
	e.args = append(append(e.sim.ControllerArgs(), framework.FastDisruptionArgs...), "--metrics-port="+strconv.Itoa(e.metricsPort))
	e.args = append(e.args, extraArgs...)
	e.karp = framework.StartKarpEnv(t, e.f, e.sim.Env(), e.args...)
}

// restartKarp kills the controller with SIGKILL (no clean-up) and starts
// a new one on the same simulated AWS.
func (e *awsEnv) restartKarp(t *testing.T, kill func()) {
	t.Helper()
	kill()
	e.karp = framework.StartKarpEnv(t, e.f, e.sim.Env(), e.args...)
	if e.cleanup != nil {
		t.Cleanup(e.cleanup)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// metrics returns the controller's Prometheus exposition text.
func (e *awsEnv) metrics(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", e.metricsPort))
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// metricSum sums the samples of a metric whose label text contains every
// one of labels.
func metricSum(text, name string, labels ...string) float64 {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// nodeClass is the getting-started EC2NodeClass: al2023@latest in the
// discovery-tagged subnets and security groups, with the node role.
func (e *awsEnv) nodeClass(name string) *awsv1.EC2NodeClass {
	discovery := map[string]string{awssim.DiscoveryTagKey: e.sim.ClusterName()}
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: discovery}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: discovery}},
			Role:                       e.sim.RoleName(),
		},
	}
}

// createNodeClass creates the EC2NodeClass and waits until it is Ready.
// It is deleted when the test ends, after its NodePools (deleteOnCleanup).
func (e *awsEnv) createNodeClass(t *testing.T, nc *awsv1.EC2NodeClass) {
	t.Helper()
	framework.Create(t, e.cl, nc)
	framework.Eventually(t, scaleTimeout, func(ctx context.Context) (bool, string) {
		got := &awsv1.EC2NodeClass{}
		if err := e.cl.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
			return false, err.Error()
		}
		return got.StatusConditions().IsTrue("Ready"), fmt.Sprintf("EC2NodeClass %s conditions %v", nc.Name, got.Status.Conditions)
	})
}

// setUp creates a test's Ready EC2NodeClass, namespace and NodePool, all
// called name (pool is awsPool(name, name) as the test adjusts it), and
// deletes them when the test ends.
func (e *awsEnv) setUp(t *testing.T, name string, pool *test.NodePoolWrapper) {
	t.Helper()
	e.createNodeClass(t, e.nodeClass(name))
	framework.Create(t, e.cl, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	framework.Create(t, e.cl, pool.Obj())
	e.deleteOnCleanup(t, []string{name}, []string{name}, []string{name})
}

// deleteOnCleanup deletes, when the test ends and while karp still runs,
// the namespaces, NodePools (and their NodeClaims, waiting until karp has
// terminated them) and then the EC2NodeClasses, waiting until all are gone.
func (e *awsEnv) deleteOnCleanup(t *testing.T, namespaces, pools, nodeClasses []string) {
	e.cleanup = func() {
		ctx := context.Background()
		var objs []client.Object
		for _, ns := range namespaces {
			objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
		for _, p := range pools {
			objs = append(objs, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: p}})
		}
		for _, o := range objs {
			_ = e.cl.Delete(ctx, o)
		}
		for _, p := range pools {
			_ = e.cl.DeleteAllOf(ctx, &karpv1.NodeClaim{}, client.MatchingLabels{karpv1.NodePoolLabelKey: p})
		}
		if !waitFor(cleanupTimeout, func() bool {
			for _, p := range pools {
				if len(framework.PoolNodeClaims(ctx, e.cl, p)) > 0 {
					return false
				}
			}
			return true
		}) {
			t.Errorf("clean-up: NodeClaims of %v left after %s", pools, cleanupTimeout)
		}
		for _, nc := range nodeClasses {
			obj := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: nc}}
			_ = e.cl.Delete(ctx, obj)
			objs = append(objs, obj)
		}
		if !waitFor(cleanupTimeout, func() bool {
			for _, o := range objs {
				if !apierrors.IsNotFound(e.cl.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))) {
					return false
				}
			}
			return true
		}) {
			t.Errorf("clean-up: objects of %v %v %v left after %s", namespaces, pools, nodeClasses, cleanupTimeout)
		}
	}
	t.Cleanup(e.cleanup)
}

func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(500 * time.Millisecond)
	}
	return cond()
}

// live reports whether the instance exists for EC2 (not shutting down or
// terminated).
func live(inst ec2types.Instance) bool {
	switch inst.State.Name {
	case ec2types.InstanceStateNameShuttingDown, ec2types.InstanceStateNameTerminated:
		return false
	}
	return true
}

// instanceOf returns the simulated instance behind a providerID.
func (e *awsEnv) instanceOf(providerID string) (ec2types.Instance, bool) {
	return e.sim.Instance(providerID[strings.LastIndex(providerID, "/")+1:])
}

// tag returns an instance tag's value.
func tag(inst ec2types.Instance, key string) string {
	for _, t := range inst.Tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// poolNodes lists the Nodes of a NodePool.
func poolNodes(ctx context.Context, cl client.Client, pool string) []corev1.Node {
	var list corev1.NodeList
	if err := cl.List(ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		return nil
	}
	return list.Items
}

// awsPool is a NodePool on an EC2NodeClass for amd64 c, m and r types,
// consolidating only empty nodes and never on its own: tests that replace
// nodes see only the replacements they cause.
func awsPool(name, nodeClass string) *test.NodePoolWrapper {
	return test.MakeNodePool(name).NodeClassRef(awsv1.NodeClassReference(nodeClass)).
		Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64").
		Requirement(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m", "r").
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never))
}
