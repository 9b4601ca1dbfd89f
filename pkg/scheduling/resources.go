package scheduling

import (
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodRequests returns what a pod asks a node for: max(largest init
// container, sum of containers) with restartable-init (sidecar) rules, plus
// spec.overhead (component-helpers semantics), plus pods: 1.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	reqs[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return reqs
}

// WithLimitRangeDefaults returns the pod as the API server would store it
// after LimitRange admission: containers without a request get the
// LimitRange defaultRequest (falling back to its default limit, then its
// max, as LimitRange defaulting does), and containers with a limit but no
// request get request = limit. The pod is copied only when something changes.
func WithLimitRangeDefaults(pod *corev1.Pod, limitRanges []corev1.LimitRange) *corev1.Pod {
	var out *corev1.Pod
	for _, init := range []bool{false, true} {
		list := pod.Spec.Containers
		if init {
			list = pod.Spec.InitContainers
		}
		for i := range list {
			missing := missingRequests(&list[i], pod.Namespace, limitRanges)
			if len(missing) == 0 {
				continue
			}
			if out == nil {
				out = pod.DeepCopy()
			}
			c := &out.Spec.Containers[i]
			if init {
				c = &out.Spec.InitContainers[i]
			}
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			for name, q := range missing {
				c.Resources.Requests[name] = q
			}
		}
	}
	if out == nil {
		return pod
	}
	return out
}

func missingRequests(c *corev1.Container, namespace string, limitRanges []corev1.LimitRange) corev1.ResourceList {
	var out corev1.ResourceList
	for name, limit := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok {
			if out == nil {
				out = corev1.ResourceList{}
			}
			out[name] = limit
		}
	}
	for i := range limitRanges {
		lr := &limitRanges[i]
		if lr.Namespace != "" && lr.Namespace != namespace {
			continue
		}
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for _, src := range []corev1.ResourceList{item.DefaultRequest, item.Default, item.Max} {
				for name, q := range src {
					if _, ok := c.Resources.Requests[name]; ok {
						continue
					}
					if _, ok := out[name]; !ok {
						if out == nil {
							out = corev1.ResourceList{}
						}
						out[name] = q
					}
				}
			}
		}
	}
	return out
}

// ResourceIndex assigns each resource name a slot in a Vector. cpu, memory
// and pods always take slots 0, 1 and 2.
type ResourceIndex struct {
	names []corev1.ResourceName
	slots map[corev1.ResourceName]int
}

// Well-known vector slots.
const (
	SlotCPU    = 0
	SlotMemory = 1
	SlotPods   = 2
)

// NewResourceIndex builds an index holding cpu, memory, pods and every
// resource named in lists, in sorted order after the first three.
func NewResourceIndex(lists ...corev1.ResourceList) *ResourceIndex {
	idx := &ResourceIndex{slots: map[corev1.ResourceName]int{}}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		idx.add(n)
	}
	var extra []corev1.ResourceName
	for _, l := range lists {
		for n := range l {
			if _, ok := idx.slots[n]; !ok && !slices.Contains(extra, n) {
				extra = append(extra, n)
			}
		}
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i] < extra[j] })
	for _, n := range extra {
		idx.add(n)
	}
	return idx
}

func (idx *ResourceIndex) add(n corev1.ResourceName) {
	idx.slots[n] = len(idx.names)
	idx.names = append(idx.names, n)
}

// Len is the vector length.
func (idx *ResourceIndex) Len() int { return len(idx.names) }

// Name returns the resource in slot i.
func (idx *ResourceIndex) Name(i int) corev1.ResourceName { return idx.names[i] }

// Slot returns the slot of a resource, or -1.
func (idx *ResourceIndex) Slot(n corev1.ResourceName) int {
	if s, ok := idx.slots[n]; ok {
		return s
	}
	return -1
}

// Vector converts a resource list; resources outside the index are dropped.
// cpu is in millicores, everything else in base units.
func (idx *ResourceIndex) Vector(rl corev1.ResourceList) Vector {
	return idx.Fill(make(Vector, len(idx.names)), rl)
}

// Fill is Vector written into v, of length Len, which it returns: a
// caller converting many lists it only reads once can reuse one vector.
func (idx *ResourceIndex) Fill(v Vector, rl corev1.ResourceList) Vector {
	clear(v)
	for n, q := range rl {
		if s, ok := idx.slots[n]; ok {
			v[s] = quantityUnits(n, q)
		}
	}
	return v
}

// List converts a vector back, omitting zero entries.
func (idx *ResourceIndex) List(v Vector) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i, x := range v {
		if x == 0 {
			continue
		}
		out[idx.names[i]] = UnitsQuantity(idx.names[i], x)
	}
	return out
}

func quantityUnits(n corev1.ResourceName, q resource.Quantity) int64 {
	if n == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// UnitsQuantity turns vector units back into a quantity (cpu from millicores).
func UnitsQuantity(n corev1.ResourceName, x int64) resource.Quantity {
	switch n {
	case corev1.ResourceCPU:
		return *resource.NewMilliQuantity(x, resource.DecimalSI)
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return *resource.NewQuantity(x, resource.BinarySI)
	}
	return *resource.NewQuantity(x, resource.DecimalSI)
}

// HumanUnits prints x units of the resource for people: cpu in cores
// ("63.77", not "63770m"), other resources as their quantity.
func HumanUnits(n corev1.ResourceName, x int64) string {
	if n == corev1.ResourceCPU {
		return strconv.FormatFloat(float64(x)/1000, 'f', -1, 64)
	}
	q := UnitsQuantity(n, x)
	return q.String()
}

// Vector is a resource vector in ResourceIndex slot order.
type Vector []int64

// Fits reports whether v ≤ capacity in every slot.
func (v Vector) Fits(capacity Vector) bool {
	for i, x := range v {
		if x > capacity[i] {
			return false
		}
	}
	return true
}

// FitsWith reports whether a + b ≤ capacity without allocating.
func FitsWith(a, b, capacity Vector) bool {
	for i := range a {
		if a[i]+b[i] > capacity[i] {
			return false
		}
	}
	return true
}

// Add adds o into v in place.
func (v Vector) Add(o Vector) {
	for i := range v {
		v[i] += o[i]
	}
}

// Sub subtracts o from v in place.
func (v Vector) Sub(o Vector) {
	for i := range v {
		v[i] -= o[i]
	}
}

// Clone copies v.
func (v Vector) Clone() Vector { return slices.Clone(v) }
