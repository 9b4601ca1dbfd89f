package buffers

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
)

// Buffer is one resolved CapacityBuffer: Replicas pods of Template's shape.
type Buffer struct {
	Key      types.NamespacedName
	UID      types.UID
	Template corev1.PodTemplateSpec
	Replicas int32
}

// Outcome is where one provisioning pass placed a buffer's pods.
type Outcome struct {
	// Existing were placed on nodes that exist or are launching.
	Existing int
	// New needed new NodeClaims (the pass launched them, unless a limit
	// refused them).
	New int
	// Unplaced fit nowhere karp may launch.
	Unplaced int
}

// changesBuffer is how many outcome changes may wait for the controller
// before more are dropped (a dropped change is picked up by the
// controller's periodic resync).
const changesBuffer = 1024

// Store is the set of buffers karp keeps room for. It is safe for
// concurrent use.
type Store struct {
	mu       sync.RWMutex
	buffers  map[types.NamespacedName]Buffer
	outcomes map[types.NamespacedName]Outcome
	changes  chan event.TypedGenericEvent[*autoscalingv1beta1.CapacityBuffer]
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{buffers: map[types.NamespacedName]Buffer{}, outcomes: map[types.NamespacedName]Outcome{},
		changes: make(chan event.TypedGenericEvent[*autoscalingv1beta1.CapacityBuffer], changesBuffer)}
}

// Set records the buffer as resolved and reports whether that changed
// what the store held for it (a change forgets its outcome).
func (s *Store) Set(b Buffer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.buffers[b.Key]
	if ok && old.UID == b.UID && old.Replicas == b.Replicas && equality.Semantic.DeepEqual(old.Template, b.Template) {
		return false
	}
	b.Template = *b.Template.DeepCopy()
	s.buffers[b.Key] = b
	// Where the old pods went says nothing about the new ones.
	delete(s.outcomes, b.Key)
	return true
}

// Delete forgets the buffer (deleted, or not ready for provisioning) and
// its outcome; it reports whether the store held it.
func (s *Store) Delete(key types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.buffers[key]
	delete(s.buffers, key)
	delete(s.outcomes, key)
	return ok
}

// Pods returns the virtual pods of every buffer, fresh objects in a stable
// order (by buffer, then index).
func (s *Store) Pods() []*corev1.Pod {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := make([]types.NamespacedName, 0, len(s.buffers))
	for key := range s.buffers {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	var out []*corev1.Pod
	for _, key := range keys {
		b := s.buffers[key]
		for i := range b.Replicas {
			out = append(out, VirtualPod(b, int(i)))
		}
	}
	return out
}

// Record replaces the outcomes with those of the latest provisioning pass
// (a buffer with no pods in it has none) and signals the buffers whose
// outcome changed.
func (s *Store) Record(outcomes map[types.NamespacedName]Outcome) {
	s.mu.Lock()
	var changed []types.NamespacedName
	for key := range s.buffers {
		old, had := s.outcomes[key]
		now, has := outcomes[key]
		if had != has || old != now {
			changed = append(changed, key)
		}
	}
	s.outcomes = map[types.NamespacedName]Outcome{}
	for key, o := range outcomes {
		if _, ok := s.buffers[key]; ok {
			s.outcomes[key] = o
		}
	}
	s.mu.Unlock()
	for _, key := range changed {
		obj := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		select {
		case s.changes <- event.TypedGenericEvent[*autoscalingv1beta1.CapacityBuffer]{Object: obj}:
		default:
		}
	}
}

// Outcome is where the last provisioning pass placed the buffer's pods;
// false when no pass placed them since the buffer was (re)resolved.
func (s *Store) Outcome(key types.NamespacedName) (Outcome, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.outcomes[key]
	return o, ok
}

// Changes signals each buffer whose outcome changed, for the controller
// that writes its Provisioning condition.
func (s *Store) Changes() <-chan event.TypedGenericEvent[*autoscalingv1beta1.CapacityBuffer] {
	return s.changes
}

// VirtualPod is the i-th pod of the buffer: the template's metadata and
// spec, named after the buffer, with a UID derived from the buffer's, and
// annotated as virtual. It is pending and never created.
func VirtualPod(b Buffer, i int) *corev1.Pod {
	t := b.Template.DeepCopy()
	annotations := t.Annotations
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[autoscalingv1beta1.AnnotationVirtualPod] = "true"
	annotations[autoscalingv1beta1.AnnotationBufferName] = b.Key.Name
	annotations[autoscalingv1beta1.AnnotationBufferNamespace] = b.Key.Namespace
	spec := t.Spec
	spec.NodeName = ""
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("%s-buffer-%d", b.Key.Name, i),
			Namespace:   b.Key.Namespace,
			UID:         types.UID(fmt.Sprintf("%s-%d", b.UID, i)),
			Labels:      t.Labels,
			Annotations: annotations,
		},
		Spec:   spec,
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// IsVirtual reports whether the pod is a buffer's virtual pod: annotated
// so, and never stored by the API server (no resourceVersion), so a real
// pod carrying the annotation is still a real pod.
func IsVirtual(pod *corev1.Pod) bool {
	return pod != nil && pod.ResourceVersion == "" && pod.Annotations[autoscalingv1beta1.AnnotationVirtualPod] == "true"
}

// KeyOf is the buffer a virtual pod belongs to; false for a real pod and
// for a booked ProvisioningRequest's virtual pod.
func KeyOf(pod *corev1.Pod) (types.NamespacedName, bool) {
	if !IsVirtual(pod) || pod.Annotations[autoscalingv1beta1.AnnotationBufferName] == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: pod.Annotations[autoscalingv1beta1.AnnotationBufferNamespace],
		Name: pod.Annotations[autoscalingv1beta1.AnnotationBufferName]}, true
}
