package install

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/charts"
	"github.com/karp-autoscaler/karp/pkg/operator"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// The release the suite installs.
const (
	releaseName    = "karp"
	namespace      = "karp"
	serviceAccount = "karp"
	fieldManager   = "helm-install-e2e"
)

// installed is the chart installed once per test binary and the
// controller running as its ServiceAccount.
type installed struct {
	// Config authenticates as the chart's ServiceAccount.
	Config *rest.Config
	// Env is the controller's environment, resolved from the Deployment.
	Env []string
	// Kubeconfig holds only the ServiceAccount's token.
	Kubeconfig string
	// HealthPort serves /healthz and /readyz, MetricsPort /metrics.
	HealthPort, MetricsPort int
	cmd                     *exec.Cmd
	exited                  chan struct{}
	log                     string
}

var (
	installOnce sync.Once
	current     *installed
	installErr  error
)

// install renders and applies the charts and starts the controller on
// first use; every test shares them.
func install(t *testing.T) *installed {
	t.Helper()
	f := framework.Current(t)
	installOnce.Do(func() { current, installErr = doInstall(f) })
	if installErr != nil {
		t.Fatal(installErr)
	}
	select {
	case <-current.exited:
		t.Fatalf("karp-controller exited; log: %s", current.log)
	default:
	}
	return current
}

func doInstall(f *framework.Framework) (*installed, error) {
	ctx := context.Background()
	metricsPort, err := operator.FreePort()
	if err != nil {
		return nil, err
	}
	healthPort, err := operator.FreePort()
	if err != nil {
		return nil, err
	}
	// Ports the machine has free; resources, which the chart turns into
	// CPU_REQUESTS and MEMORY_LIMIT; a validation delay that keeps the
	// consolidation scenario short. Everything else is the chart's default.
	values := map[string]any{
		"controller": map[string]any{
			"metrics":     map[string]any{"port": metricsPort},
			"healthProbe": map[string]any{"port": healthPort},
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "1", "memory": "512Mi"},
				"limits":   map[string]any{"memory": "2Gi"},
			},
		},
		"settings": map[string]any{"disruptionValidationDelay": "1s"},
	}
	crdObjs, err := charts.Objects(charts.KarpCRD, charts.Release{Name: releaseName + "-crd", Namespace: namespace})
	if err != nil {
		return nil, err
	}
	objs, err := charts.Objects(charts.Karp, charts.Release{Name: releaseName, Namespace: namespace, Values: values})
	if err != nil {
		return nil, err
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(namespace)
	all := append(append([]*unstructured.Unstructured{ns}, crdObjs...), objs...)
	var deployment *appsv1.Deployment
	for _, obj := range all {
		if err := f.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("server-side applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		if obj.GetKind() == "Deployment" {
			deployment = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, deployment); err != nil {
				return nil, err
			}
		}
	}
	if deployment == nil {
		return nil, fmt.Errorf("the karp chart rendered no Deployment")
	}
	if deployment.Spec.Template.Spec.ServiceAccountName != serviceAccount {
		return nil, fmt.Errorf("the Deployment runs as %q, want %q", deployment.Spec.Template.Spec.ServiceAccountName, serviceAccount)
	}
	env, err := containerEnv(deployment)
	if err != nil {
		return nil, err
	}
	for _, want := range []string{"CPU_REQUESTS=1000", "MEMORY_LIMIT=2147483648", "LEADER_ELECTION_NAMESPACE=" + namespace} {
		if !slices.Contains(env, want) {
			return nil, fmt.Errorf("the Deployment's environment %v lacks %s", env, want)
		}
	}
	cfg, kubeconfig, err := serviceAccountConfig(ctx, f)
	if err != nil {
		return nil, err
	}
	in := &installed{Config: cfg, Env: env, Kubeconfig: kubeconfig, HealthPort: healthPort, MetricsPort: metricsPort, exited: make(chan struct{})}
	if err := in.start(); err != nil {
		return nil, err
	}
	return in, nil
}

// containerEnv resolves the controller container's environment as the
// kubelet would for a pod of the Deployment in the release namespace.
func containerEnv(d *appsv1.Deployment) ([]string, error) {
	containers := d.Spec.Template.Spec.Containers
	if len(containers) != 1 {
		return nil, fmt.Errorf("the Deployment has %d containers, want 1", len(containers))
	}
	c := containers[0]
	var env []string
	for _, e := range c.Env {
		value := e.Value
		switch {
		case e.ValueFrom == nil:
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			value = d.Namespace
		case e.ValueFrom.ResourceFieldRef != nil:
			ref := e.ValueFrom.ResourceFieldRef
			list := c.Resources.Requests
			name := strings.TrimPrefix(ref.Resource, "requests.")
			if strings.HasPrefix(ref.Resource, "limits.") {
				list, name = c.Resources.Limits, strings.TrimPrefix(ref.Resource, "limits.")
			}
			q, ok := list[corev1.ResourceName(name)]
			if !ok {
				return nil, fmt.Errorf("env %s: %s is not set on the container", e.Name, ref.Resource)
			}
			divisor := ref.Divisor
			if divisor.IsZero() {
				divisor.Set(1)
			}
			value = strconv.FormatInt((q.MilliValue()+divisor.MilliValue()-1)/divisor.MilliValue(), 10)
		default:
			return nil, fmt.Errorf("env %s: valueFrom %+v is not resolved by this test", e.Name, e.ValueFrom)
		}
		env = append(env, e.Name+"="+value)
	}
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("envFrom is not resolved by this test")
	}
	return env, nil
}

// serviceAccountConfig gets a token for the chart's ServiceAccount from
// the TokenRequest API and writes a kubeconfig holding only that token.
func serviceAccountConfig(ctx context.Context, f *framework.Framework) (*rest.Config, string, error) {
	cs, err := kubernetes.NewForConfig(f.Config)
	if err != nil {
		return nil, "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, serviceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](2 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("requesting a token for %s/%s: %w", namespace, serviceAccount, err)
	}
	cfg := rest.AnonymousClientConfig(f.Config)
	cfg.BearerToken = tr.Status.Token
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, "", err
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[serviceAccount] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["karp"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: serviceAccount, Namespace: namespace}
	kc.CurrentContext = "karp"
	path := filepath.Join(filepath.Dir(f.Cluster.Kubeconfig), "karp-serviceaccount.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return nil, "", err
	}
	return cfg, path, nil
}

// start runs karp-controller with the chart's environment (and nothing
// of this process's but PATH, HOME and TMPDIR) and the ServiceAccount's
// kubeconfig, and waits until /readyz answers 200.
func (in *installed) start() error {
	bin, err := buildController()
	if err != nil {
		return err
	}
	logFile, err := os.CreateTemp("", "karp-e2e-install-controller-*.log")
	if err != nil {
		return err
	}
	in.log = logFile.Name()
	logs = append(logs, in.log)
	in.cmd = exec.Command(bin, "--kubeconfig", in.Kubeconfig)
	in.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}, in.Env...)
	in.cmd.Stdout, in.cmd.Stderr = logFile, logFile
	if err := in.cmd.Start(); err != nil {
		_ = logFile.Close()
		return err
	}
	go func() { _ = in.cmd.Wait(); _ = logFile.Close(); close(in.exited) }()
	deadline := time.Now().Add(2 * time.Minute)
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", in.HealthPort)
	for {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-in.exited:
			return fmt.Errorf("karp-controller exited before it was ready; log: %s", in.log)
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("karp-controller not ready on %s after 2 minutes (last: %w); log: %s", url, err, in.log)
		}
	}
}

// replica starts a second controller as the Deployment's second replica
// would run: the same identity and environment, on its own ports.
func (in *installed) replica() (*installed, error) {
	metricsPort, err := operator.FreePort()
	if err != nil {
		return nil, err
	}
	healthPort, err := operator.FreePort()
	if err != nil {
		return nil, err
	}
	// exec keeps the last value of a repeated variable.
	env := append(slices.Clone(in.Env), "METRICS_PORT="+strconv.Itoa(metricsPort), "HEALTH_PROBE_PORT="+strconv.Itoa(healthPort))
	r := &installed{Config: in.Config, Env: env, Kubeconfig: in.Kubeconfig, HealthPort: healthPort, MetricsPort: metricsPort,
		exited: make(chan struct{})}
	return r, r.start()
}

// stop interrupts the controller and waits for it to release its Lease
// and exit, killing it after 30 seconds.
func (in *installed) stop() {
	select {
	case <-in.exited:
		return
	default:
	}
	_ = in.cmd.Process.Signal(os.Interrupt)
	select {
	case <-in.exited:
	case <-time.After(30 * time.Second):
		_ = in.cmd.Process.Kill()
		<-in.exited
	}
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
	// logs are the controllers' log files, removed when every test passed.
	logs []string
)

// cleanUp removes the built binary, and the controllers' logs unless the
// run failed or KARP_E2E_KEEP_LOGS is set (then it names them).
func cleanUp(failed bool) {
	framework.RemoveBuilt(built)
	for _, log := range logs {
		if failed || os.Getenv("KARP_E2E_KEEP_LOGS") != "" {
			fmt.Fprintf(os.Stderr, "e2e: karp-controller log kept in %s\n", log)
			continue
		}
		_ = os.Remove(log)
	}
}

// buildController builds cmd/karp-controller once into a temporary
// directory.
func buildController() (string, error) {
	buildOnce.Do(func() { built, buildErr = goBuild() })
	return built, buildErr
}

func goBuild() (string, error) {
	return framework.Build("github.com/karp-autoscaler/karp/cmd/karp-controller", "karp-controller")
}

// stopController interrupts the controller and waits for it to release
// its Lease and exit (killing it after 30 seconds).
func stopController() {
	if current != nil && current.cmd != nil {
		current.stop()
	}
}

// expectNoForbidden fails the test when the controller's log reports a
// request the API server refused: the chart's RBAC missed something the
// controller does.
func expectNoForbidden(t *testing.T, in *installed) {
	t.Helper()
	raw, err := os.ReadFile(in.log)
	if err != nil {
		t.Fatal(err)
	}
	// The authorizer's refusal reads `... is forbidden: User "..." cannot
	// <verb> resource ...`; other 403s (a namespace being terminated) are
	// not about RBAC.
	var refused []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, "forbidden: User") {
			refused = append(refused, line)
		}
	}
	if len(refused) > 0 {
		t.Errorf("the API server refused %d of the controller's requests (log %s):\n%s", len(refused), in.log,
			strings.Join(refused[:min(len(refused), 10)], "\n"))
	}
}
