package framework

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// reconcileTotal is controller-runtime's counter of finished reconciles,
// labelled by controller name and result. karp's disruption loop is the
// controller "disruption": one reconcile is one pass over the cluster.
const reconcileTotal = "controller_runtime_reconcile_total"

// Reconciles reads, from the controller's metrics, how many reconciles
// each named controller has finished (all results summed). A controller
// that has not reconciled yet counts 0.
func (k *Karp) Reconciles(ctx context.Context, controllers ...string) (map[string]float64, error) {
	raw, err := k.rawMetrics(ctx)
	if err != nil {
		return nil, err
	}
	return reconcileCounts(raw, controllers)
}

// CounterSums reads the controller's metrics once and sums every series
// of each named counter (0 for one the controller has not recorded), in
// the order of names.
func (k *Karp) CounterSums(ctx context.Context, names ...string) ([]float64, error) {
	raw, err := k.rawMetrics(ctx)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing karp's metrics: %w", err)
	}
	sums := make([]float64, len(names))
	for i, name := range names {
		for _, m := range families[name].GetMetric() {
			sums[i] += m.GetCounter().GetValue()
		}
	}
	return sums, nil
}

// rawMetrics is the controller's metrics exposition.
func (k *Karp) rawMetrics(ctx context.Context) ([]byte, error) {
	if k.MetricsPort == 0 {
		return nil, fmt.Errorf("karp runs without metrics (--metrics-port=0): cannot read its metrics")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	url := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(k.MetricsPort)) + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading karp pid %d metrics: %w", k.PID(), err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading karp pid %d metrics: %w", k.PID(), err)
	}
	return raw, nil
}

// reconcileCounts sums reconcileTotal per named controller in a metrics
// exposition.
func reconcileCounts(raw []byte, controllers []string) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing karp's metrics: %w", err)
	}
	counts := make(map[string]float64, len(controllers))
	for _, c := range controllers {
		counts[c] = 0
	}
	for _, m := range families[reconcileTotal].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() != "controller" {
				continue
			}
			if _, ok := counts[l.GetValue()]; ok {
				counts[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	return counts, nil
}

// Passes is how many reconciles each controller must finish for a
// negative check ("nothing happens") to have been given its chance.
type Passes map[string]float64

// HoldsFor checks cond every second until every controller in passes has
// finished at least that many more reconciles than when HoldsFor began,
// and fails the test as soon as cond reports a problem. It bounds a
// "nothing changes" wait by the controller's own passes over the cluster
// rather than by wall minutes: with --disruption-poll-period=1s, ten
// disruption passes take about ten seconds on a quiet machine and longer
// on a loaded one, where a fixed wait would prove less. limit is how long
// the passes may take before the test fails: a controller that stopped
// reconciling proves nothing.
func (k *Karp) HoldsFor(t testing.TB, passes Passes, limit time.Duration, cond func(ctx context.Context) string) (checks int) {
	t.Helper()
	ctx := t.Context()
	names := make([]string, 0, len(passes))
	for name := range passes {
		names = append(names, name)
	}
	deadline := time.Now().Add(limit)
	// The metrics endpoint of a controller that just started answers
	// within a second or two: read errors are retried until the limit.
	var base map[string]float64
	for {
		if msg := cond(ctx); msg != "" {
			t.Fatalf("after %d checks: %s", checks, msg)
		}
		checks++
		now, err := k.Reconciles(ctx, names...)
		switch {
		case err != nil && time.Now().After(deadline):
			t.Fatalf("after %s: %v", limit, err)
		case err != nil:
			time.Sleep(time.Second)
			continue
		case base == nil:
			base = now
			time.Sleep(time.Second)
			continue
		}
		var short []string
		for _, name := range names {
			if done := now[name] - base[name]; done < passes[name] {
				short = append(short, fmt.Sprintf("%s %v of %v", name, done, passes[name]))
			}
		}
		if len(short) == 0 {
			return checks
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, karp has not finished the passes the check needs: %s", limit, strings.Join(short, ", "))
		}
		time.Sleep(time.Second)
	}
}
