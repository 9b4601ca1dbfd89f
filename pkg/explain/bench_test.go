package explain

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/operator"
)

// largeCluster is 1,000 m5.2xlarge-shaped nodes of NodePool default, 20
// pods of 250m on each (20,000 pods), the last node empty, and 50 pending
// pods of which one is too large for any instance type.
func largeCluster() *cluster {
	c := newCluster()
	c.objs = c.objs[:2] // the NodePools
	for i := range 1000 {
		node := fmt.Sprintf("node-%04d", i)
		c.node(node, "default", "m5.large")
		if i == 999 {
			continue
		}
		for j := range 20 {
			c.pod(fmt.Sprintf("p-%04d-%02d", i, j), node, "90m", func(p *corev1.Pod) { p.Labels = map[string]string{"app": fmt.Sprintf("app-%d", j)} })
		}
	}
	for i := range 49 {
		c.pod(fmt.Sprintf("pending-%02d", i), "", "1")
	}
	c.pod("pending-huge", "", "5000")
	return c
}

// BenchmarkExplain measures what a user waits for: reading the cluster
// (from memory here; a live API server adds the list calls), filling the
// state and answering, on 1,000 nodes and 20,000 pods.
func BenchmarkExplain(b *testing.B) {
	c := largeCluster()
	types, err := kwok.LoadInstanceTypes("", nil)
	if err != nil {
		b.Fatal(err)
	}
	scheme := operator.NewScheme()
	engine := func(b *testing.B) *Engine {
		reader, err := NewObjectReader(scheme, c.objs)
		if err != nil {
			b.Fatal(err)
		}
		e, err := New(b.Context(), reader, scheme, Options{InstanceTypes: types})
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	run := map[string]func(e *Engine) error{
		"pod": func(e *Engine) error {
			r, err := e.Pod(b.Context(), "default/pending-huge")
			if err == nil && r.Decision != DecisionUnschedulable {
				err = fmt.Errorf("pending-huge: %s", r.Decision)
			}
			return err
		},
		"node": func(e *Engine) error {
			r, err := e.Node(b.Context(), "node-0999")
			// The pending pods need the empty node's room.
			if err == nil && (r.Status != StatusKept || !r.Empty) {
				err = fmt.Errorf("node-0999: %s %s", r.Status, r.Message)
			}
			return err
		},
		"simulate-disruption": func(e *Engine) error {
			r, err := e.Disruption(b.Context(), DisruptionOptions{})
			if err != nil {
				return err
			}
			n := len(r.Kept)
			for _, c := range r.Commands {
				n += len(c.Nodes)
			}
			if n != 1000 {
				err = fmt.Errorf("%d nodes kept or in commands, want every one of 1,000", n)
			}
			return err
		},
	}
	for _, name := range []string{"pod", "node", "simulate-disruption"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := run[name](engine(b)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
