package install

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// leaderMetric is the gauge controller-runtime's leader elector sets to 1
// in the process that holds the chart's Lease.
const leaderMetric = `leader_election_master_status{name="karpenter-leader-election"}`

// TestSecondReplicaTakesOver runs a second controller as the chart's
// second replica would (same ServiceAccount, same environment): it waits
// while the first leads, and leads once the first stops and releases the
// Lease. The second replica then serves the suite's other tests.
func TestSecondReplicaTakesOver(t *testing.T) {
	first := install(t)
	second, err := first.replica()
	if err != nil {
		t.Fatal(err)
	}
	leads := func(in *installed) (bool, string) {
		v, err := scrape(in.MetricsPort, leaderMetric)
		if err != nil {
			return false, err.Error()
		}
		return v == "1", fmt.Sprintf("%s = %q", leaderMetric, v)
	}
	framework.Eventually(t, time.Minute, func(context.Context) (bool, string) { return leads(first) })
	// The second replica is up (ready) and stays a follower while the first leads.
	for range 5 {
		if ok, msg := leads(second); ok {
			second.stop()
			t.Fatalf("the second replica leads while the first holds the Lease: %s", msg)
		}
		time.Sleep(time.Second)
	}

	first.stop()
	current = second
	framework.Eventually(t, time.Minute, func(context.Context) (bool, string) { return leads(second) })
}

// scrape returns the value of the sample named series on the metrics
// endpoint, "" when absent.
func scrape(port int, series string) (string, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if value, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			return value, nil
		}
	}
	return "", sc.Err()
}
