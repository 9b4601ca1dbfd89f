package provisioning

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

const schedulingIDLabel = "scheduling_id"

// unfinishedWorkVec is, while a solve runs, how long it has been running
// (upstream's karpenter_scheduler_unfinished_work_seconds): a solve that
// never finishes shows here, not in scheduling_duration_seconds. Each solve
// has its own scheduling_id; its series goes when the solve ends.
var unfinishedWorkVec = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: metrics.Namespace, Subsystem: schedulerSubsystem, Name: "unfinished_work_seconds",
	Help: "How many seconds of work has been done that is in progress and hasn't been observed by scheduling_duration_seconds.",
}, []string{controllerLabel, schedulingIDLabel})

// unfinishedWorkPeriod is how often a running solve's unfinished work is
// updated.
const unfinishedWorkPeriod = time.Second

// newSchedulingID names one provisioning pass in the scheduler metrics.
func newSchedulingID() string { return string(uuid.NewUUID()) }

// setQueueDepth publishes the pass's queue depth under its scheduling ID,
// dropping the previous passes' series.
func setQueueDepth(id string, n int) {
	queueDepthVec.DeletePartialMatch(prometheus.Labels{controllerLabel: provisionerName})
	queueDepthVec.WithLabelValues(provisionerName, id).Set(float64(n))
}

// trackUnfinishedWork publishes the time since start under id, updated
// every unfinishedWorkPeriod on p's clock, until the returned stop is
// called; stop removes the series.
func (p *Provisioner) trackUnfinishedWork(id string, start time.Time) (stop func()) {
	gauge := unfinishedWorkVec.WithLabelValues(provisionerName, id)
	gauge.Set(p.clock.Since(start).Seconds())
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-p.clock.After(unfinishedWorkPeriod):
				gauge.Set(p.clock.Since(start).Seconds())
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		unfinishedWorkVec.DeleteLabelValues(provisionerName, id)
	}
}
