package operator

import (
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// internLimit bounds each table of a podInterner. Past it the table
// starts over: pods already cached keep what they share, and new pods
// share afresh, so workloads that come and go never grow the tables.
const internLimit = 4096

// podInterner makes the pods of one workload share, in the cache, the
// parts they have in common: resource lists, labels, node selectors,
// tolerations and owner references. A Deployment's replicas are
// identical in all of these, and each decoded pod otherwise holds its own
// copy (about 2 KB of maps per pod). Sharing is safe because nothing
// writes a cached Pod: reads through the client are deep copies, and the
// cluster state treats the pods it shares as read-only (pkg/state).
type podInterner struct {
	mu          sync.Mutex
	key         []byte
	lists       map[string]corev1.ResourceList
	labels      map[string]map[string]string
	tolerations map[string][]corev1.Toleration
	owners      map[string][]metav1.OwnerReference
}

func newPodInterner() *podInterner {
	return &podInterner{
		lists:       map[string]corev1.ResourceList{},
		labels:      map[string]map[string]string{},
		tolerations: map[string][]corev1.Toleration{},
		owners:      map[string][]metav1.OwnerReference{},
	}
}

// intern replaces, in place, the pod's shareable parts with equal ones
// already held by other cached pods.
func (in *podInterner) intern(pod *corev1.Pod) {
	in.mu.Lock()
	defer in.mu.Unlock()
	pod.Labels = in.stringMap(pod.Labels)
	pod.Spec.NodeSelector = in.stringMap(pod.Spec.NodeSelector)
	pod.OwnerReferences = in.ownerRefs(pod.OwnerReferences)
	pod.Spec.Tolerations = in.tolerationList(pod.Spec.Tolerations)
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			r := &containers[i].Resources
			r.Requests = in.resourceList(r.Requests)
			r.Limits = in.resourceList(r.Limits)
		}
	}
	if pod.Spec.Overhead != nil {
		pod.Spec.Overhead = in.resourceList(pod.Spec.Overhead)
	}
}

// lookup returns the table's value for the key built in in.key, or
// stores v under it.
func lookup[V any](in *podInterner, table map[string]V, v V) V {
	if shared, ok := table[string(in.key)]; ok {
		return shared
	}
	if len(table) >= internLimit {
		clear(table)
	}
	table[string(in.key)] = v
	return v
}

func (in *podInterner) stringMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	in.key = in.key[:0]
	for _, k := range keys {
		in.key = append(append(append(append(in.key, k...), 0), m[k]...), 0)
	}
	return lookup(in, in.labels, m)
}

func (in *podInterner) resourceList(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return l
	}
	names := make([]corev1.ResourceName, 0, len(l))
	for name := range l {
		names = append(names, name)
	}
	slices.Sort(names)
	in.key = in.key[:0]
	for _, name := range names {
		q := l[name]
		// Canonical: 1 and 1000m are the same request.
		in.key = append(append(append(append(in.key, name...), 0), q.String()...), 0)
	}
	return lookup(in, in.lists, l)
}

func (in *podInterner) tolerationList(ts []corev1.Toleration) []corev1.Toleration {
	if len(ts) == 0 {
		return ts
	}
	in.key = in.key[:0]
	for _, t := range ts {
		in.key = append(append(append(append(in.key, t.Key...), 0), t.Operator...), 0)
		in.key = append(append(append(append(in.key, t.Value...), 0), t.Effect...), 0)
		if t.TolerationSeconds != nil {
			in.key = strconv.AppendInt(in.key, *t.TolerationSeconds, 10)
		} else {
			in.key = append(in.key, '-')
		}
		in.key = append(in.key, 0)
	}
	return lookup(in, in.tolerations, ts)
}

func (in *podInterner) ownerRefs(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(refs) == 0 {
		return refs
	}
	in.key = in.key[:0]
	flag := func(b *bool) byte {
		switch {
		case b == nil:
			return '-'
		case *b:
			return 't'
		}
		return 'f'
	}
	for _, r := range refs {
		in.key = append(append(append(append(in.key, r.APIVersion...), 0), r.Kind...), 0)
		in.key = append(append(append(append(in.key, r.Name...), 0), r.UID...), 0)
		in.key = append(in.key, flag(r.Controller), flag(r.BlockOwnerDeletion), 0)
	}
	return lookup(in, in.owners, refs)
}
