package solverinput

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// Cluster fills in the LimitRanges (their default requests size pods that
// declare none) and the Namespaces (pod affinity terms select them by
// label).
func Cluster(ctx context.Context, kubeClient client.Reader, in *simulation.Input) error {
	var limitRanges corev1.LimitRangeList
	if err := kubeClient.List(ctx, &limitRanges); err != nil {
		return fmt.Errorf("listing limitranges: %w", err)
	}
	in.LimitRanges = limitRanges.Items
	var namespaces corev1.NamespaceList
	if err := kubeClient.List(ctx, &namespaces); err != nil {
		return fmt.Errorf("listing namespaces: %w", err)
	}
	in.Namespaces = in.Namespaces[:0]
	for i := range namespaces.Items {
		in.Namespaces = append(in.Namespaces, &namespaces.Items[i])
	}
	return nil
}

// Launchable reports whether the controllers may launch nodes for the
// NodePool: one the solver launches for (simulation.LaunchesNodes: not
// static, not deleting) that is Ready.
func Launchable(np *karpv1.NodePool) bool {
	return simulation.LaunchesNodes(np) && np.StatusConditions().IsTrue(karpv1.ConditionTypeReady)
}
