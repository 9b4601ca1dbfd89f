package explain

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/overlay"
	"github.com/karp-autoscaler/karp/pkg/controllers/capacitybuffer"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeoverlay"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// OverlaySummary is a NodeOverlay as it bears on one NodePool.
type OverlaySummary struct {
	Name string `json:"name"`
	// Applied is false for an overlay the controller refuses (runtime
	// validation, a conflict with another); Message says why.
	Applied bool   `json:"applied"`
	Message string `json:"message,omitempty"`
	// InstanceTypes counts the NodePool's instance types whose price or
	// capacity the overlay sets.
	InstanceTypes int `json:"instanceTypes,omitempty"`
}

// BufferSummary is a CapacityBuffer as it bears on one NodePool.
type BufferSummary struct {
	Name string `json:"name"` // namespace/name
	// Ready is the buffer's resolution (ReadyForProvisioning); Message
	// says why not.
	Ready   bool   `json:"ready"`
	Message string `json:"message,omitempty"`
	// Replicas is the room the buffer asks for, in pods of its shape;
	// Planned how many of them karp's next launch keeps in this NodePool.
	Replicas int32 `json:"replicas"`
	Planned  int   `json:"planned"`
}

// bufferRoom is one CapacityBuffer read and resolved as the controller
// resolves it.
type bufferRoom struct {
	key        types.NamespacedName
	resolution capacitybuffer.Resolution
}

// applyOverlays evaluates the cluster's NodeOverlays as the NodeOverlay
// controller does and returns base with them applied. A cluster without the
// NodeOverlay CRD has none.
func (e *Engine) applyOverlays(ctx context.Context, base cloudprovider.CloudProvider) (cloudprovider.CloudProvider, error) {
	ev, err := nodeoverlay.Evaluate(ctx, e.client, base, []sets.Set[string]{kwokv1alpha1.WellKnownLabels})
	if meta.IsNoMatchError(err) {
		return base, nil
	}
	if err != nil {
		return nil, err
	}
	if len(ev.TypeErrors) > 0 {
		return nil, fmt.Errorf("evaluating nodeoverlays: %w", ev.TypeErrors[0])
	}
	if len(ev.Overlays) == 0 {
		return base, nil
	}
	e.overlays = ev
	decorated := overlay.Decorate(base, e.client)
	decorated.Store().Update(ev.Applied, ev.Generations, ev.NodePools)
	return decorated, nil
}

// readBuffers resolves the cluster's CapacityBuffers as the capacitybuffer
// controller does and returns the store the provisioner and disruption
// keep room for (nil when there are none, or no CapacityBuffer CRD).
func (e *Engine) readBuffers(ctx context.Context) (*buffers.Store, error) {
	var list autoscalingv1beta1.CapacityBufferList
	if err := e.client.List(ctx, &list); meta.IsNoMatchError(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("listing capacitybuffers: %w", err)
	}
	var store *buffers.Store
	for i := range list.Items {
		cb := &list.Items[i]
		res, err := capacitybuffer.Resolve(ctx, e.client, cb)
		if err != nil {
			return nil, fmt.Errorf("resolving capacitybuffer %s/%s: %w", cb.Namespace, cb.Name, err)
		}
		if !res.Active {
			continue // another autoscaler's buffer
		}
		e.buffers = append(e.buffers, bufferRoom{key: types.NamespacedName{Namespace: cb.Namespace, Name: cb.Name}, resolution: res})
		if res.Ready && res.Buffer.Replicas > 0 {
			if store == nil {
				store = buffers.NewStore()
			}
			store.Set(res.Buffer)
		}
	}
	return store, nil
}

// overlaySummaries are the overlays that set something on the NodePool's
// instance types, and every overlay the controller refuses.
func (e *Engine) overlaySummaries(ctx context.Context, nodePool string) []OverlaySummary {
	if e.overlays == nil {
		return nil
	}
	np := e.nodePool(nodePool)
	var base []*cloudprovider.InstanceType
	if np != nil {
		if d, ok := e.cloudProvider.(*overlay.CloudProvider); ok {
			base, _ = d.Unwrap().GetInstanceTypes(ctx, np)
		}
	}
	var out []OverlaySummary
	for _, o := range e.overlays.Applied {
		changed := 0
		if np != nil {
			for i, it := range overlay.Apply([]overlay.Overlay{o}, np, base) {
				if it != base[i] {
					changed++
				}
			}
		}
		if changed > 0 {
			out = append(out, OverlaySummary{Name: o.Name, Applied: true, InstanceTypes: changed})
		}
	}
	for name, why := range e.overlays.Invalid {
		out = append(out, OverlaySummary{Name: name, Message: "not applied: " + why})
	}
	for name, why := range e.overlays.Conflicts {
		out = append(out, OverlaySummary{Name: name, Message: "not applied: " + why})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// bufferSummaries are the CapacityBuffers read, with the room the plan
// keeps for each in the NodePool.
func (e *Engine) bufferSummaries(planned map[types.NamespacedName]int) []BufferSummary {
	out := make([]BufferSummary, 0, len(e.buffers))
	for _, b := range e.buffers {
		s := BufferSummary{Name: b.key.String(), Ready: b.resolution.Ready, Replicas: b.resolution.Buffer.Replicas,
			Planned: planned[b.key]}
		if !b.resolution.Ready {
			s.Message = b.resolution.Reason + ": " + b.resolution.Message
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// nodePool is the NodePool read with the name, nil when there is none.
func (e *Engine) nodePool(name string) *karpv1.NodePool {
	for i := range e.nodePools {
		if e.nodePools[i].Name == name {
			return &e.nodePools[i]
		}
	}
	return nil
}
