// Package scrape_test runs the full controller list against a real API
// server, scrapes /metrics and checks the series upstream Karpenter's
// dashboards and documentation query. It is its own test binary because
// controller-runtime allows each controller name once per process.
package scrape_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	kwoknodeclass "github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/controllers/nodeclass"
	"github.com/karp-autoscaler/karp/pkg/controllers"
	"github.com/karp-autoscaler/karp/pkg/operator"
	"github.com/karp-autoscaler/karp/pkg/options"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

// upstreamMetric is one entry of testdata/upstream-metrics.yaml.
type upstreamMetric struct {
	Series string            `json:"series"`
	Labels []string          `json:"labels"`
	Values map[string]string `json:"values,omitempty"`
}

// TestMetricsUpstreamQueriesRead runs a scale-out (a pending pod gets a
// node) and a consolidation (the pod goes, the empty node is removed)
// under the full controller list, scrapes /metrics (while the pod waits
// for a decision, with the node up, and after the consolidation) and
// checks that every metric upstream's dashboards and docs query is there
// with the labels they use.
func TestMetricsUpstreamQueriesRead(t *testing.T) {
	var want []upstreamMetric
	raw, err := os.ReadFile("testdata/upstream-metrics.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, &want); err != nil {
		t.Fatal(err)
	}

	env := environment.New(t)
	healthPort, metricsPort := freePort(t), freePort(t)
	startWithControllers(t, env, healthPort, metricsPort)
	waitReady(t, healthPort)
	h := env.Client
	ctx := t.Context()

	// 1. Scale-out: a pending pod, a NodePool that consolidates at once.
	for _, obj := range []client.Object{
		test.MakeKWOKNodeClass("default").Obj(),
		test.MakeNodePool("default").Limits(test.ResourceList("cpu", "1000")).
			ConsolidateAfter(karpv1.NewNillableDuration(0)).
			ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized).Obj(),
		test.MakePod("web").Requests("cpu", "1").Obj(),
	} {
		if err := h.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	// While the batch window is open, the pod waits for a decision.
	var pending map[string]*dto.MetricFamily
	poll(t, "the pod undecided in the scrape", func() bool {
		pending = scrape(t, metricsPort)
		return findSeries(pending, upstreamMetric{Series: "karpenter_pods_provisioning_scheduling_undecided_time_seconds",
			Values: map[string]string{"name": "web"}}) == ""
	})
	var claim karpv1.NodeClaim
	poll(t, "a nodeclaim launched for the pod", func() bool {
		var list karpv1.NodeClaimList
		if h.List(ctx, &list) != nil || len(list.Items) != 1 {
			return false
		}
		claim = list.Items[0]
		return claim.Status.ProviderID != ""
	})
	// Stand in for the kubelet (the Node) and kube-scheduler (the binding).
	node := test.MakeNode("scrape-node").ProviderID(claim.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint).
		Capacity("cpu", "4", "memory", "16Gi", "pods", "110").Allocatable("cpu", "4", "memory", "16Gi", "pods", "110").Obj()
	if err := h.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	liftNotReadyTaint(t, h, node.Name)
	poll(t, "nodeclaim initialized", func() bool {
		got := &karpv1.NodeClaim{}
		return h.Get(ctx, keyOf(claim.Name), got) == nil && got.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized)
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Target: corev1.ObjectReference{Kind: "Node", Name: node.Name}}
	if err := h.SubResource("binding").Create(ctx, pod, binding); err != nil {
		t.Fatal(err)
	}
	// A DaemonSet's pod on the node, so daemon requests have a series.
	if err := h.Create(ctx, test.MakePod("agent").NodeName(node.Name).Requests("cpu", "100m").
		Owner("DaemonSet", "agent", "uid-agent-ds").Obj()); err != nil {
		t.Fatal(err)
	}
	var withNode map[string]*dto.MetricFamily
	poll(t, "the bound pod in the scrape", func() bool {
		withNode = scrape(t, metricsPort)
		return findSeries(withNode, upstreamMetric{Series: "karpenter_pods_state", Values: map[string]string{"name": "web", "node": node.Name}}) == "" &&
			findSeries(withNode, upstreamMetric{Series: "karpenter_nodes_total_daemon_requests"}) == ""
	})

	// 2. Consolidation: the pods go, the empty node is removed.
	agent := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default"}}
	for _, p := range []*corev1.Pod{agent, pod} {
		if err := h.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, "the empty nodeclaim consolidated away", func() bool {
		return h.Get(ctx, keyOf(claim.Name), &karpv1.NodeClaim{}) != nil
	})

	// 3. Every listed metric is in one of the three scrapes.
	var afterConsolidation map[string]*dto.MetricFamily
	poll(t, "the termination counted", func() bool {
		afterConsolidation = scrape(t, metricsPort)
		return findSeries(afterConsolidation, upstreamMetric{Series: "karpenter_nodeclaims_terminated_total"}) == ""
	})
	for _, m := range want {
		t.Run(m.Series, func(t *testing.T) {
			if findSeries(pending, m) == "" || findSeries(withNode, m) == "" {
				return
			}
			if why := findSeries(afterConsolidation, m); why != "" {
				t.Error(why)
			}
		})
	}
}

// scrape reads and parses /metrics.
func scrape(t *testing.T, metricsPort int) map[string]*dto.MetricFamily {
	t.Helper()
	_, body, err := get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return families
}

// findSeries reports why no series of m's metric carries m's labels (and
// values), or "" when one does. Histograms and summaries carry le and
// quantile on their buckets and quantiles.
func findSeries(families map[string]*dto.MetricFamily, m upstreamMetric) string {
	name := strings.TrimSuffix(m.Series, "_bucket")
	f, ok := families[name]
	if !ok {
		return fmt.Sprintf("%s is not exported", m.Series)
	}
	if len(f.Metric) == 0 {
		return fmt.Sprintf("%s has no series", m.Series)
	}
	var seen [][]string
	for _, metric := range f.Metric {
		got := map[string]string{}
		for _, l := range metric.Label {
			got[l.GetName()] = l.GetValue()
		}
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			got["le"] = ""
		case dto.MetricType_SUMMARY:
			got["quantile"] = ""
		}
		if hasAll(got, m) {
			return ""
		}
		names := make([]string, 0, len(got))
		for k, v := range got {
			names = append(names, k+"="+v)
		}
		slices.Sort(names)
		seen = append(seen, names)
	}
	return fmt.Sprintf("no %s series has labels %v with %v; series seen: %v", m.Series, m.Labels, m.Values, seen)
}

func hasAll(got map[string]string, m upstreamMetric) bool {
	for _, l := range m.Labels {
		if _, ok := got[l]; !ok {
			return false
		}
	}
	for k, v := range m.Values {
		if got[k] != v {
			return false
		}
	}
	return true
}

// liftNotReadyTaint stands in for kube-controller-manager, which lifts the
// not-ready taint the API server adds to new Nodes once they are Ready.
func liftNotReadyTaint(t *testing.T, h client.Client, name string) {
	t.Helper()
	poll(t, "not-ready taint lifted", func() bool {
		current := &corev1.Node{}
		if h.Get(t.Context(), keyOf(name), current) != nil {
			return false
		}
		current.Spec.Taints = slices.DeleteFunc(current.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		return h.Update(t.Context(), current) == nil
	})
}

// startWithControllers runs karp's operator with the full controller list
// and the fake provider against env until the test ends.
func startWithControllers(t *testing.T, env *environment.Environment, healthPort, metricsPort int) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	// A batch window of 3s without new pods (upstream's default is 1s)
	// leaves the scrape time to see a pod waiting for its decision.
	opts, err := options.Parse(fs, []string{fmt.Sprintf("--health-probe-port=%d", healthPort),
		fmt.Sprintf("--metrics-port=%d", metricsPort), "--disable-leader-election", "--batch-idle-duration=3s"})
	if err != nil {
		t.Fatal(err)
	}
	op, err := operator.New(t.Context(), env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The fake provider launches for KWOKNodeClasses, so the kwok
	// provider's KWOKNodeClass status controller runs beside the core list
	// (as the kwok provider brings it): the NodePool is not Ready before.
	list := append(controllers.NewControllers(op.Deps(fake.New())), kwoknodeclass.NewController(op.KubeClient, op.Clock))
	if err := op.Register(t.Context(), list...); err != nil {
		t.Fatal(err)
	}
	operatortest.StartUntilCleanup(t, op)
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := operator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func get(url string) (int, string, error) {
	resp, err := http.Get(url) //nolint:gosec,noctx // test-local URL
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// waitReady polls /readyz until it answers 200.
func waitReady(t *testing.T, healthPort int) {
	t.Helper()
	poll(t, "/readyz to answer 200", func() bool {
		code, _, err := get(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
		return err == nil && code == http.StatusOK
	})
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func keyOf(name string) client.ObjectKey { return client.ObjectKey{Name: name} }
