package disruption

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// movablePods are the pods a consolidation simulation may place: the
// pending ones and those of every node (any node may be a candidate).
// They are the pods whose default topology spread constraints are
// gathered.
func movablePods(in simulation.Input) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), in.Pods...)
	for _, n := range in.Nodes {
		out = append(out, n.Pods...)
	}
	return out
}
