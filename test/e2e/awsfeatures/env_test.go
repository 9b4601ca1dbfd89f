package awsfeatures_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
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
	cleanupTimeout = 3 * time.Minute
)

// awsEnv is the package's simulated AWS account, its kubelets and the karp
// controller using it.
type awsEnv struct {
	f    *framework.Framework
	cl   client.Client
	sim  *awssim.Sim
	karp *framework.Karp
}

// startAWS builds and serves a simulated AWS for the local cluster, runs
// its kubelets (registering a Node a second after launch) and starts the
// karp controller on it with fast disruption and extraArgs; all stop when
// t ends.
func startAWS(t *testing.T, extraArgs ...string) *awsEnv {
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
	// Runs after the kubelets stop: no Node of this account outlives it.
	t.Cleanup(func() { deleteNodesOf(f.Client, sim) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	kubelet := sim.NewKubelet(f.Client, awssim.KubeletOptions{RegistrationDelay: time.Second})
	logger := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, "awssim.kubelet", prefix, args) }, funcr.Options{})
	go func() { defer close(done); _ = kubelet.Run(log.IntoContext(ctx, logger)) }()
	t.Cleanup(func() { cancel(); <-done })
	args := append(append(sim.ControllerArgs(), framework.FastDisruptionArgs...), extraArgs...)
	return &awsEnv{f: f, cl: f.Client, sim: sim, karp: framework.StartKarpEnv(t, f, sim.Env(), args...)}
}

// kubernetesVersion is the local API server's "major.minor", the version
// the simulated SSM publishes AMIs for.
func kubernetesVersion(t *testing.T, f *framework.Framework) string {
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
		if strings.HasPrefix(node.Spec.ProviderID, "aws:///") && ids[instanceID(node.Spec.ProviderID)] {
			node.Finalizers = nil
			_ = cl.Update(context.Background(), node)
			_ = cl.Delete(context.Background(), node)
		}
	}
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

// setUp creates a subtest's EC2NodeClass (waiting until it is Ready), its
// namespace and NodePool, all called by the class's name, and deletes
// them when the subtest ends, while karp still runs.
func (e *awsEnv) setUp(t *testing.T, nodeClass *awsv1.EC2NodeClass, pool *test.NodePoolWrapper) {
	t.Helper()
	name := nodeClass.Name
	t.Cleanup(func() { e.tearDown(t, name) })
	framework.Create(t, e.cl, nodeClass)
	framework.Eventually(t, scaleTimeout, func(ctx context.Context) (bool, string) {
		got := &awsv1.EC2NodeClass{}
		if err := e.cl.Get(ctx, client.ObjectKeyFromObject(nodeClass), got); err != nil {
			return false, err.Error()
		}
		return got.StatusConditions().IsTrue("Ready"), fmt.Sprintf("EC2NodeClass %s conditions %v", name, got.Status.Conditions)
	})
	framework.Create(t, e.cl, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	framework.Create(t, e.cl, pool.Obj())
}

// tearDown deletes the namespace and NodePool called name and their
// NodeClaims, waits until karp has terminated them, then deletes the
// EC2NodeClass and waits until all are gone.
func (e *awsEnv) tearDown(t *testing.T, name string) {
	ctx := context.Background()
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}},
	}
	for _, o := range objs {
		_ = e.cl.Delete(ctx, o)
	}
	_ = e.cl.DeleteAllOf(ctx, &karpv1.NodeClaim{}, client.MatchingLabels{karpv1.NodePoolLabelKey: name})
	if !waitFor(cleanupTimeout, func() bool { return len(framework.PoolNodeClaims(ctx, e.cl, name)) == 0 }) {
		t.Errorf("clean-up: NodeClaims of %s left after %s", name, cleanupTimeout)
	}
	nodeClass := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_ = e.cl.Delete(ctx, nodeClass)
	objs = append(objs, nodeClass)
	if !waitFor(cleanupTimeout, func() bool {
		for _, o := range objs {
			if !apierrors.IsNotFound(e.cl.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))) {
				return false
			}
		}
		return true
	}) {
		t.Errorf("clean-up: the objects of %s left after %s", name, cleanupTimeout)
	}
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

// awsPool is a NodePool on an EC2NodeClass for amd64 c, m and r types,
// consolidating only empty nodes and never on its own: a test sees only the
// replacements it causes.
func awsPool(name string) *test.NodePoolWrapper {
	return test.MakeNodePool(name).NodeClassRef(awsv1.NodeClassReference(name)).
		Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64").
		Requirement(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m", "r").
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never))
}

// metrics returns the controller's Prometheus exposition text ("" when it
// cannot be read).
func (e *awsEnv) metrics() string {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", e.karp.MetricsPort))
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
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); ok && err == nil {
			sum += v
		}
	}
	return sum
}

// waitAvailable waits until n pods of the namespace are Available and
// returns them.
func waitAvailable(t *testing.T, cl client.Client, namespace string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	framework.Eventually(t, scaleTimeout, func(ctx context.Context) (bool, string) {
		pods = framework.AvailablePods(ctx, cl, namespace, nil)
		return len(pods) == n, fmt.Sprintf("%d of %d pods available in %s; pending %d", len(pods), n, namespace, framework.PendingPods(ctx, cl, namespace))
	})
	return pods
}

func nodeOf(t *testing.T, cl client.Client, name string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{}
	if err := cl.Get(t.Context(), client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	return node
}

// instanceID is the instance of an aws:///<zone>/<id> providerID.
func instanceID(providerID string) string {
	return providerID[strings.LastIndex(providerID, "/")+1:]
}

// instanceOf returns the simulated instance behind a providerID; it fails
// the test when the account has none.
func (e *awsEnv) instanceOf(t *testing.T, providerID string) ec2types.Instance {
	t.Helper()
	inst, ok := e.sim.Instance(instanceID(providerID))
	if !ok {
		t.Fatalf("no simulated instance behind %s", providerID)
	}
	return inst
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

// gone reports whether the object is deleted from the API server.
func gone(ctx context.Context, cl client.Client, obj client.Object) bool {
	err := cl.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	return apierrors.IsNotFound(err)
}

// hasEvent reports whether an event of reason regards the object of kind
// and name (in any namespace: a cluster-scoped object's are in default).
func hasEvent(t *testing.T, cl client.Client, kind, name, reason string) bool {
	t.Helper()
	for _, got := range framework.EventReasons(t, cl, "", kind, name) {
		if got == reason {
			return true
		}
	}
	return false
}
