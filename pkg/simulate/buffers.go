package simulate

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/controllers/capacitybuffer"
	"github.com/karp-autoscaler/karp/pkg/manifest"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// resolveBuffers resolves the manifests' CapacityBuffers with the
// capacitybuffer controller's code, reading their PodTemplates and
// workloads from the manifests, and returns the buffers that keep room
// (in manifest order) and a warning for each that does not.
func resolveBuffers(ctx context.Context, set *manifest.Set) ([]buffers.Buffer, []string, error) {
	reader := manifestReader{set: set}
	var out []buffers.Buffer
	var warnings []string
	for _, cb := range set.CapacityBuffers {
		res, err := capacitybuffer.Resolve(ctx, reader, cb)
		if err != nil {
			return nil, nil, fmt.Errorf("resolving CapacityBuffer %s/%s: %w", cb.Namespace, cb.Name, err)
		}
		switch {
		case !res.Active:
			warnings = append(warnings, fmt.Sprintf("CapacityBuffer %s/%s: provisioningStrategy %q is not karp's: no room kept", cb.Namespace, cb.Name,
				*cb.Spec.ProvisioningStrategy))
		case !res.Ready:
			warnings = append(warnings, fmt.Sprintf("CapacityBuffer %s/%s: no room kept: %s (%s)", cb.Namespace, cb.Name, res.Message, res.Reason))
		case res.Buffer.Replicas == 0:
			warnings = append(warnings, fmt.Sprintf("CapacityBuffer %s/%s: resolves to 0 pods: no room kept", cb.Namespace, cb.Name))
		default:
			out = append(out, res.Buffer)
		}
	}
	return out, warnings, nil
}

// manifestReader serves the controller's reads of PodTemplates and
// workloads from the manifests (what the API server would hold once they
// are applied).
type manifestReader struct{ set *manifest.Set }

var _ client.Reader = manifestReader{}

// Get copies the object named key of obj's kind into obj, or returns a
// NotFound error.
func (r manifestReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	switch o := obj.(type) {
	case *corev1.PodTemplate:
		if found := find(r.set.PodTemplates, key); found != nil {
			found.DeepCopyInto(o)
			return nil
		}
	case *appsv1.Deployment:
		if found := find(r.set.Deployments, key); found != nil {
			found.DeepCopyInto(o)
			return nil
		}
	case *appsv1.ReplicaSet:
		if found := find(r.set.ReplicaSets, key); found != nil {
			found.DeepCopyInto(o)
			return nil
		}
	case *appsv1.StatefulSet:
		if found := find(r.set.StatefulSets, key); found != nil {
			found.DeepCopyInto(o)
			return nil
		}
	case *batchv1.Job:
		if found := find(r.set.Jobs, key); found != nil {
			found.DeepCopyInto(o)
			return nil
		}
	default:
		return fmt.Errorf("reading %T from manifests is not supported", obj)
	}
	return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
}

// List is not needed by the code that reads through manifestReader.
func (manifestReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("listing from manifests is not supported")
}

// find returns the object of objs named key.
func find[T client.Object](objs []T, key types.NamespacedName) T {
	var zero T
	for _, o := range objs {
		if o.GetNamespace() == key.Namespace && o.GetName() == key.Name {
			return o
		}
	}
	return zero
}

// BufferSummary is the room kept for one CapacityBuffer.
type BufferSummary struct {
	// Buffer is "namespace/name".
	Buffer string `json:"buffer"`
	// Replicas is how many pods of its template it keeps room for, as the
	// controller resolves it (replicas, percentage, limits).
	Replicas int32 `json:"replicas"`
	// OnExisting, OnNew and Unplaced count its pods placed on nodes that
	// exist (or a static NodePool's), on new NodeClaims, and nowhere.
	OnExisting int `json:"onExisting"`
	OnNew      int `json:"onNew"`
	Unplaced   int `json:"unplaced"`
	// Reason is why its first unplaced pod fits nowhere.
	Reason string `json:"reason,omitempty"`
	// PricePerHour is what the buffer adds to the bill: the run's price
	// minus the price of the same run without it.
	PricePerHour float64 `json:"pricePerHour"`
}

// bufferSummaries counts where res placed each buffer's pods.
func bufferSummaries(bufs []buffers.Buffer, res *simulation.Result) []BufferSummary {
	out := make([]BufferSummary, len(bufs))
	index := map[types.NamespacedName]int{}
	for i, b := range bufs {
		out[i] = BufferSummary{Buffer: b.Key.String(), Replicas: b.Replicas}
		index[b.Key] = i
	}
	count := func(pod *corev1.Pod, add func(*BufferSummary)) {
		if key, ok := buffers.KeyOf(pod); ok {
			add(&out[index[key]])
		}
	}
	for _, ep := range res.ExistingNodes {
		for _, pod := range ep.Pods {
			count(pod, func(s *BufferSummary) { s.OnExisting++ })
		}
	}
	for _, nc := range res.NodeClaims {
		for _, pod := range nc.Pods {
			count(pod, func(s *BufferSummary) { s.OnNew++ })
		}
	}
	for _, pe := range res.PodErrors {
		count(pe.Pod, func(s *BufferSummary) {
			s.Unplaced++
			if s.Reason == "" && pe.Status != nil {
				s.Reason = pe.Status.Message()
			}
		})
	}
	return out
}

// bufferPods are the buffers' virtual pods, as the provisioner takes them
// from the buffers' store, and the Headroom set marking them.
func bufferPods(bufs []buffers.Buffer) ([]*corev1.Pod, map[types.UID]bool) {
	store := buffers.NewStore()
	for _, b := range bufs {
		store.Set(b)
	}
	pods := store.Pods()
	headroom := make(map[types.UID]bool, len(pods))
	for _, pod := range pods {
		headroom[pod.UID] = true
	}
	return pods, headroom
}

// priceBuffers sets what the buffers add to the bill: for each, the price
// of res (the run with every buffer) minus that of the run without its
// pods, and for all of them together, minus the run without any.
func priceBuffers(ctx context.Context, in simulation.Input, bufs []buffers.Buffer, res *simulation.Result, rep *Report) {
	with := res.Cost()
	without := func(drop func(*corev1.Pod) bool) float64 {
		cp := in
		cp.Pods = slices.DeleteFunc(slices.Clone(in.Pods), drop)
		return solve(ctx, cp).Cost()
	}
	rep.BufferPricePerHour = roundCents(with - without(buffers.IsVirtual))
	if len(bufs) == 1 {
		rep.Buffers[0].PricePerHour = rep.BufferPricePerHour
		return
	}
	for i, b := range bufs {
		rep.Buffers[i].PricePerHour = roundCents(with - without(func(p *corev1.Pod) bool {
			key, ok := buffers.KeyOf(p)
			return ok && key == b.Key
		}))
	}
}
