package simulate

import (
	"fmt"
	"sort"

	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/overlay"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// applyOverlays gives each NodePool its instance types with the manifests'
// NodeOverlays applied, as the controller does with the NodeOverlay gate
// on (the manifests holding overlays is taken as asking for them). An
// overlay the controller would refuse (runtime validation, a conflict) is
// left out with a warning.
func applyOverlays(overlays []*karpv1alpha1.NodeOverlay, pools []*simulation.NodePool) []string {
	if len(overlays) == 0 {
		return nil
	}
	var warnings []string
	var decoded []overlay.Overlay
	for _, no := range overlays {
		o, err := decodeOverlay(no)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("NodeOverlay %s: not applied: %v", no.Name, err))
			continue
		}
		decoded = append(decoded, o)
	}
	overlay.Order(decoded)
	evalPools := make([]overlay.PoolTypes, len(pools))
	for i, p := range pools {
		evalPools[i] = overlay.PoolTypes{NodePool: p.NodePool, InstanceTypes: p.InstanceTypes}
	}
	ev := overlay.Evaluate(decoded, evalPools)
	names := make([]string, 0, len(ev.Conflicts))
	for name := range ev.Conflicts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		warnings = append(warnings, fmt.Sprintf("NodeOverlay %s: not applied: %s", name, ev.Conflicts[name]))
	}
	for _, p := range pools {
		p.InstanceTypes = overlay.Apply(ev.Applied, p.NodePool, p.InstanceTypes)
	}
	return warnings
}

func decodeOverlay(no *karpv1alpha1.NodeOverlay) (overlay.Overlay, error) {
	if err := no.RuntimeValidate(); err != nil {
		return overlay.Overlay{}, err
	}
	return overlay.New(no)
}
