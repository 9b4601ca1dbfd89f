package provisioning

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/solverinput"
)

// volumeRequirements resolves where each pod's volumes let it run (see
// solverinput.VolumeTerms): a bound PersistentVolume's node affinity, or
// for an unbound claim of a WaitForFirstConsumer StorageClass, its
// allowedTopologies. Pods whose claims cannot be read are returned
// separately, with the reason; API errors other than NotFound abort the
// pass.
func (p *Provisioner) volumeRequirements(ctx context.Context, pods []*corev1.Pod) (map[types.UID][]scheduling.Requirements, map[types.UID]simulation.PodError, error) {
	out := map[types.UID][]scheduling.Requirements{}
	ignored := map[types.UID]simulation.PodError{}
	for _, pod := range pods {
		alternatives, err := solverinput.VolumeTerms(ctx, p.kubeClient, pod)
		if err != nil {
			if !apierrors.IsNotFound(err) {
				return nil, nil, err
			}
			ignored[pod.UID] = simulation.PodError{Pod: pod, Status: scheduling.NewStatus(scheduling.Unschedulable, scheduling.Because(scheduling.ReasonVolume, err.Error()))}
			continue
		}
		if len(alternatives) > 0 {
			out[pod.UID] = alternatives
		}
	}
	return out, ignored, nil
}
