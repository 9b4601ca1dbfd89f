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
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// consFastArgs make the disruption controller act within seconds.
var consFastArgs = []string{"--disruption-validation-delay=1s", "--disruption-poll-period=1s",
	"--batch-max-duration=2s", "--batch-idle-duration=500ms"}

var (
	consBuildOnce sync.Once
	consBin       string
	consBuildErr  error
)

// consKarp is a running `karp controller`.
type consKarp struct {
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

// consStartKarp builds karp once and runs its controller against the local
// cluster; it is stopped when the test ends (or earlier with stop).
func consStartKarp(t testing.TB, f *framework.Framework, extraArgs ...string) *consKarp {
	t.Helper()
	consBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "karp-e2e-consolidation-")
		if err != nil {
			consBuildErr = err
			return
		}
		consBin = filepath.Join(dir, "karp")
		out, err := exec.Command("go", "build", "-o", consBin, "github.com/karp-autoscaler/karp/cmd/karp").CombinedOutput()
		if err != nil {
			consBuildErr = fmt.Errorf("building karp: %w\n%s", err, out)
		}
	})
	if consBuildErr != nil {
		t.Fatal(consBuildErr)
	}
	logFile, err := os.CreateTemp("", "karp-e2e-controller-*.log")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"controller", "--kubeconfig", f.Cluster.Kubeconfig, "--metrics-port=0", "--health-probe-port=0",
		"--leader-election-name=karp-e2e-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))}, consFastArgs...)
	k := &consKarp{cmd: exec.Command(consBin, append(args, extraArgs...)...), exited: make(chan struct{}), log: logFile.Name()}
	k.cmd.Stdout, k.cmd.Stderr = logFile, logFile
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = k.cmd.Wait(); _ = logFile.Close(); close(k.exited) }()
	t.Cleanup(func() {
		k.stop(os.Interrupt)
		if t.Failed() {
			if out, err := os.ReadFile(k.log); err == nil {
				if len(out) > 6000 {
					out = out[len(out)-6000:]
				}
				t.Logf("karp controller log %s (tail):\n%s", k.log, out)
			}
			return
		}
		_ = os.Remove(k.log)
	})
	return k
}

// stop signals the controller and waits for it to exit.
func (k *consKarp) stop(sig os.Signal) {
	select {
	case <-k.exited:
		return
	default:
	}
	_ = k.cmd.Process.Signal(sig)
	select {
	case <-k.exited:
	case <-time.After(30 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.exited
	}
}

// consSetup creates the test's namespace, KWOKNodeClass and NodePool (all
// named name) and removes them, with the pool's nodes, when the test ends.
// Register it before starting karp so karp still runs during the cleanup.
func consSetup(t *testing.T, name string, pool *karpv1.NodePool) *framework.Framework {
	t.Helper()
	f := framework.Current(t)
	consCreate(t, f.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	consCreate(t, f.Client, test.MakeKWOKNodeClass(name).Obj())
	pool.Spec.Template.Spec.NodeClassRef = kwokv1alpha1.NodeClassReference(name)
	consCreate(t, f.Client, pool)
	return f
}

// consCleanUp deletes the namespace and NodePool, then the pool's
// NodeClaims, waits for them to go, and deletes the KWOKNodeClass.
func consCleanUp(cl client.Client, name string) {
	ctx := context.Background()
	_ = cl.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	_ = cl.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}})
	_ = cl.DeleteAllOf(ctx, &karpv1.NodeClaim{}, client.MatchingLabels{karpv1.NodePoolLabelKey: name})
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var list karpv1.NodeClaimList
		if err := cl.List(ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: name}); err == nil && len(list.Items) == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	_ = cl.Delete(ctx, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

func consCreate(t *testing.T, cl client.Client, obj client.Object) {
	t.Helper()
	if err := cl.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// consDeployment is a Deployment of pause pods requesting cpu on the pool.
func consDeployment(name, namespace, pool string, replicas int32, cpu string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{karpv1.NodePoolLabelKey: pool},
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: test.ResourceList("cpu", cpu, "memory", "256Mi")}}},
				},
			},
		},
	}
}

// consSpread puts each pod of the app on its own node.
func consSpread(d *appsv1.Deployment) *appsv1.Deployment {
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels}}}}}
	return d
}

// consNodeClaims lists the pool's NodeClaims.
func consNodeClaims(ctx context.Context, cl client.Client, pool string) []karpv1.NodeClaim {
	var list karpv1.NodeClaimList
	if err := cl.List(ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		return nil
	}
	return list.Items
}

// consAvailable counts running, ready, non-terminating pods with the labels.
func consAvailable(ctx context.Context, cl client.Client, namespace string, labels map[string]string) int {
	var list corev1.PodList
	if err := cl.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels(labels)); err != nil {
		return -1
	}
	n := 0
	for _, p := range list.Items {
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

// consApply creates every object of a multi-document YAML file in namespace.
func consApply(t *testing.T, cl client.Client, path, namespace string, mutate func(*unstructured.Unstructured)) {
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
		if mutate != nil {
			mutate(obj)
		}
		consCreate(t, cl, obj)
	}
}

// consTainted reports whether the node carries the disrupted taint.
func consTainted(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == karpv1.DisruptedTaintKey {
			return true
		}
	}
	return false
}

// repoRoot is the directory holding go.mod (the examples are under it).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := environment.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
