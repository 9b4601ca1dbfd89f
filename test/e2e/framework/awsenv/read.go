package awsenv

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// WaitAvailable waits until n pods of the namespace are Available and
// returns them.
func (e *Env) WaitAvailable(t testing.TB, namespace string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	framework.Eventually(t, ScaleTimeout, func(ctx context.Context) (bool, string) {
		pods = framework.AvailablePods(ctx, e.Client, namespace, nil)
		return len(pods) == n, fmt.Sprintf("%d of %d pods available in %s; pending %d", len(pods), n, namespace, framework.PendingPods(ctx, e.Client, namespace))
	})
	return pods
}

// Node gets the Node called name; it fails the test when it cannot.
func (e *Env) Node(t testing.TB, name string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{}
	if err := e.Client.Get(t.Context(), client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	return node
}

// InstanceID is the instance of an aws:///<zone>/<id> providerID.
func InstanceID(providerID string) string {
	return providerID[strings.LastIndex(providerID, "/")+1:]
}

// InstanceOf returns the simulated instance behind a providerID, and
// whether the account has it (a NodeClaim not launched yet has none).
func (e *Env) InstanceOf(providerID string) (ec2types.Instance, bool) {
	return e.Sim.Instance(InstanceID(providerID))
}

// Live reports whether the instance exists for EC2 (not shutting down or
// terminated).
func Live(inst ec2types.Instance) bool {
	switch inst.State.Name {
	case ec2types.InstanceStateNameShuttingDown, ec2types.InstanceStateNameTerminated:
		return false
	}
	return true
}

// Metrics returns the controller's Prometheus exposition text ("" when it
// cannot be read).
func (e *Env) Metrics() string {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", e.Karp.MetricsPort))
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// MetricSum sums the samples of the metric called name in an exposition
// text whose label text contains every one of labels (each a literal
// such as `reason="expired"`).
func MetricSum(text, name string, labels ...string) float64 {
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
