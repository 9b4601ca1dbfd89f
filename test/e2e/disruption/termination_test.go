package disruption

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestDrainingANodeClaimKeepsNginxAvailable deletes the NodeClaim under one
// of nginx-demo's two replicas (PDB minAvailable 50%) and samples the
// cluster every 200 ms: at least one replica stays available throughout,
// the pods leave only through the Eviction API (which enforces the PDB),
// and the node, its NodeClaim and its instance go once it is drained.
func TestDrainingANodeClaimKeepsNginxAvailable(t *testing.T) {
	f := framework.Current(t)
	ctx := t.Context()
	const name = "e2e-termination"
	cl := f.Client

	termCreate(t, cl, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	termCreate(t, cl, test.MakeKWOKNodeClass(name).Obj())
	nodePool := test.MakeNodePool(name).
		NodeClassRef(kwokv1alpha1.NodeClassReference(name)).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		// Only this test's drain removes nodes.
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).
		Obj()
	termCreate(t, cl, nodePool)
	termStartKarp(t, f)
	// Registered after the controller, so it runs while karp still drains.
	t.Cleanup(func() { termCleanUp(cl, name) })

	// nginx-demo exactly as users apply it, in this test's namespace.
	termApplyManifest(t, cl, filepath.Join(repoRoot(t), "examples", "nginx-demo.yaml"), name)
	var pods []corev1.Pod
	framework.Eventually(t, 3*time.Minute, func(ctx context.Context) (bool, string) {
		pods = termNginxPods(ctx, t, cl, name)
		return termCountAvailable(pods) == 2, fmt.Sprintf("%d of 2 nginx replicas available; %s",
			termCountAvailable(pods), termDescribe(ctx, cl, name))
	})

	// The NodeClaims under both replicas go at once: the PDB lets one
	// replica be evicted at a time, the other waits for its replacement.
	drained := pods
	var nodeClaims []*karpv1.NodeClaim
	for _, p := range pods {
		nc := termNodeClaimOf(t, cl, p.Spec.NodeName)
		if !slices.ContainsFunc(nodeClaims, func(o *karpv1.NodeClaim) bool { return o.Name == nc.Name }) {
			nodeClaims = append(nodeClaims, nc)
		}
		t.Logf("replica %s runs on node %s (nodeclaim %s)", p.Name, p.Spec.NodeName, nc.Name)
	}

	w := termWatchAvailability(t, cl, name)
	for _, nc := range nodeClaims {
		if err := cl.Delete(ctx, nc); err != nil {
			t.Fatalf("deleting nodeclaim: %v", err)
		}
	}
	framework.Eventually(t, 4*time.Minute, func(ctx context.Context) (bool, string) {
		left := 0
		for _, nc := range nodeClaims {
			if !apierrors.IsNotFound(cl.Get(ctx, client.ObjectKeyFromObject(nc), &karpv1.NodeClaim{})) {
				left++
			}
			if !apierrors.IsNotFound(cl.Get(ctx, types.NamespacedName{Name: nc.Status.NodeName}, &corev1.Node{})) {
				left++
			}
		}
		avail := termCountAvailable(termNginxPods(ctx, t, cl, name))
		return left == 0 && avail == 2, fmt.Sprintf("%d nodeclaims and nodes left, %d of 2 replicas available; %s",
			left, avail, termDescribe(ctx, cl, name))
	})
	samples, minAvailable := w.stop()

	t.Logf("%d samples, at least %d replica(s) available in each", samples, minAvailable)
	if samples < 2 {
		t.Errorf("only %d samples taken", samples)
	}
	if minAvailable < 1 {
		t.Errorf("a sample saw %d available nginx replicas; the PDB requires 1", minAvailable)
	}
	for _, p := range drained {
		reasons := termEventReasons(t, cl, name, p.Name)
		if !slices.Contains(reasons, "Evicted") {
			t.Errorf("pod %s left without an eviction (events %v)", p.Name, reasons)
		}
		if slices.Contains(reasons, "Disrupted") {
			t.Errorf("pod %s was force-deleted (events %v)", p.Name, reasons)
		}
		t.Logf("pod %s events: %v", p.Name, reasons)
	}
}

// termAvailabilityWatcher samples nginx-demo's available replicas every 200 ms.
type termAvailabilityWatcher struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	samples int
	min     int
}

func termWatchAvailability(t *testing.T, cl client.Client, namespace string) *termAvailabilityWatcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &termAvailabilityWatcher{cancel: cancel, done: make(chan struct{}), min: 1 << 30}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			var list corev1.PodList
			if err := cl.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{"app": "nginx-demo"}); err == nil {
				n := termCountAvailable(list.Items)
				w.mu.Lock()
				w.samples++
				w.min = min(w.min, n)
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

func (w *termAvailabilityWatcher) stop() (samples, minAvailable int) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples, w.min
}

func termNginxPods(ctx context.Context, t *testing.T, cl client.Client, namespace string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	if err := cl.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{"app": "nginx-demo"}); err != nil {
		t.Logf("listing nginx pods: %v", err)
		return nil
	}
	return list.Items
}

// termDescribe summarises the namespace's pods and the cluster's nodes
// for failure messages.
func termDescribe(ctx context.Context, cl client.Client, namespace string) string {
	var b strings.Builder
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace(namespace)); err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s node=%q phase=%s deleting=%v conditions=", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil)
			for _, c := range p.Status.Conditions {
				fmt.Fprintf(&b, "%s=%s(%s) ", c.Type, c.Status, c.Message)
			}
			b.WriteString("; ")
		}
	}
	var nodes corev1.NodeList
	if err := cl.List(ctx, &nodes); err == nil {
		for _, n := range nodes.Items {
			fmt.Fprintf(&b, "node %s deleting=%v taints=%v ready=", n.Name, n.DeletionTimestamp != nil, n.Spec.Taints)
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady {
					b.WriteString(string(c.Status))
				}
			}
			b.WriteString("; ")
		}
	}
	return b.String()
}

// termCountAvailable counts running, ready pods that are not terminating.
func termCountAvailable(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

func termNodeClaimOf(t *testing.T, cl client.Client, nodeName string) *karpv1.NodeClaim {
	t.Helper()
	var list karpv1.NodeClaimList
	if err := cl.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if list.Items[i].Status.NodeName == nodeName {
			return &list.Items[i]
		}
	}
	t.Fatalf("no nodeclaim for node %s", nodeName)
	return nil
}

func termEventReasons(t *testing.T, cl client.Client, namespace, podName string) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := cl.List(t.Context(), &list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "Pod" && e.Regarding.Name == podName {
			out = append(out, e.Reason)
		}
	}
	return out
}

func termCreate(t *testing.T, cl client.Client, obj client.Object) {
	t.Helper()
	if err := cl.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// termCleanUp deletes the test's namespace (its workload) and NodePool,
// then the NodePool's NodeClaims, and the KWOKNodeClass; the namespace,
// NodePool and KWOKNodeClass share the name. It waits until karp
// terminated the NodeClaims and every object is gone, so the next test
// starts clean.
func termCleanUp(cl client.Client, name string) {
	ctx := context.Background()
	_ = cl.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	_ = cl.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}})
	_ = cl.DeleteAllOf(ctx, &karpv1.NodeClaim{}, client.MatchingLabels{karpv1.NodePoolLabelKey: name})
	termWaitGone(ctx, cl, func() bool {
		var list karpv1.NodeClaimList
		return cl.List(ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: name}) == nil && len(list.Items) == 0
	})
	_ = cl.Delete(ctx, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}})
	for _, obj := range []client.Object{&corev1.Namespace{}, &karpv1.NodePool{}, &kwokv1alpha1.KWOKNodeClass{}} {
		termWaitGone(ctx, cl, func() bool { return apierrors.IsNotFound(cl.Get(ctx, types.NamespacedName{Name: name}, obj)) })
	}
}

// termWaitGone polls gone for up to two minutes.
func termWaitGone(ctx context.Context, cl client.Client, gone func() bool) {
	deadline := time.Now().Add(2 * time.Minute)
	for !gone() && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
	}
}

// termApplyManifest creates every object of a multi-document YAML file in
// namespace.
func termApplyManifest(t *testing.T, cl client.Client, path, namespace string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return
			}
			t.Fatalf("decoding %s: %v", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		obj.SetNamespace(namespace)
		termCreate(t, cl, obj)
	}
}

var (
	termKarpBuildOnce sync.Once
	termKarpBin       string
	termKarpBuildErr  error
)

// termStartKarp runs `karp controller` (kwok provider) against the
// local cluster until the test ends; its log is printed if the test fails.
func termStartKarp(t *testing.T, f *framework.Framework, extraArgs ...string) {
	t.Helper()
	termKarpBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "karp-e2e-disruption-")
		if err != nil {
			termKarpBuildErr = err
			return
		}
		termKarpBin = filepath.Join(dir, "karp")
		out, err := exec.Command("go", "build", "-o", termKarpBin, "github.com/karp-autoscaler/karp/cmd/karp").CombinedOutput()
		if err != nil {
			termKarpBuildErr = fmt.Errorf("building karp: %w\n%s", err, out)
		}
	})
	if termKarpBuildErr != nil {
		t.Fatal(termKarpBuildErr)
	}
	logDir, err := os.MkdirTemp("", "karp-e2e-controller-")
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(logDir, "karp.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"controller", "--kubeconfig", f.Cluster.Kubeconfig, "--metrics-port=0", "--health-probe-port=0",
		"--leader-election-name=karp-e2e-" + strings.ToLower(t.Name()), "--batch-max-duration=2s", "--batch-idle-duration=500ms"}, extraArgs...)
	cmd := exec.Command(termKarpBin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logFile.Close()
		if !t.Failed() {
			_ = os.RemoveAll(logDir)
			return
		}
		if out, err := os.ReadFile(logPath); err == nil {
			t.Logf("karp controller log kept in %s; last 5000 bytes:\n%s", logPath, termTail(out, 5000))
		}
	})
}

func termTail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[len(b)-n:]
}
