package simulation

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// class is a scheduling equivalence class: pods with identical
// scheduling-relevant spec, labels and namespace. Everything derived from
// the spec is computed once per class.
type class struct {
	id        int
	namespace string
	labels    labels.Set
	pod       *corev1.Pod // representative, LimitRange defaults applied
	requests  scheduling.Vector
	ports     []scheduling.HostPort
	tolerates []corev1.Toleration
	variants  []*variant
	counts    []*group // groups whose selector matches this class
	owns      []*group // required anti-affinity groups this class owns
	inverse   []*group // owned anti-affinity groups whose selector matches this class
	size      float64  // summed share, for sorting (sizeShare)
	// defaultSpread is set when the spread constraints are the scheduler's
	// defaults (Input.DefaultSpread), not the pod's own.
	defaultSpread bool
	// pools counts the NodePools some variant of the class can use, and
	// onlyPool is the one when there is exactly one (binding.go); both
	// are valid once poolsKnown.
	pools      int
	onlyPool   int
	poolsKnown bool
	// waiting counts the class's pods not placed yet.
	waiting int
	// terms is the representative pod's constraints split by kind, built
	// once by podTerms.
	terms *podTerms
	// proto is the first class of this class's shape (itself for that
	// one): classes that differ only in their requests share its split
	// constraints, its variants' requirements and constraints, and the
	// topology groups that count or block it (shareVariants).
	proto *class
}

// podTerms returns the class's split constraints, splitting them on the
// first call.
func (c *class) podTerms() *podTerms {
	if c.terms == nil {
		c.terms = splitTerms(c.pod)
	}
	return c.terms
}

// variant is one relaxation level of a class: its node requirements and the
// constraints treated as required at that level.
type variant struct {
	id          int
	class       *class
	reqs        scheduling.Requirements
	strictPNS   bool // PreferNoSchedule taints must be tolerated
	relaxed     bool // a preference of the pod's is relaxed at this level
	constraints []*constraint
	pinKeys     []int // non-hostname topology keys whose domain must be fixed
	// shared indexes the caches of checks that depend on the shape alone
	// (NodePool checks, entry and existing-node compatibility, move
	// facts): the same level of every class of one shape has the same.
	shared int
}

type constraintKind int

const (
	kindSpread constraintKind = iota
	kindAffinity
	kindAnti
)

// constraint is a topology spread or pod (anti-)affinity term, required at
// the variant's level.
type constraint struct {
	kind       constraintKind
	group      *group
	maxSkew    int32
	minDomains int32
	byDefault  bool // a default spread constraint (Input.DefaultSpread)
	self       bool
	universe   []dom
	ready      bool
}

// podInfo is a pod being placed.
type podInfo struct {
	pod     *corev1.Pod
	class   *class
	variant *variant // the relaxation level it was placed at (NodeClaims only)
	relaxed bool     // placed only once a preference was relaxed
	at      *target  // where it is now (merges and moves change it)
	index   int
	seq     int // position in the solver's placements (Result.Order)
	status  *scheduling.Status
}

// shapeKey renders everything but the requests that affects where a pod
// may go: namespace, labels, node selector, affinity, tolerations, spread
// constraints, host ports and volume alternatives. Pods of one shape
// differ at most in their requests (writeRequests completes the class
// key).
func shapeKey(b *bytes.Buffer, pod *corev1.Pod, ports []scheduling.HostPort, vols []scheduling.Requirements) {
	b.Reset()
	b.WriteString(pod.Namespace)
	writeMap(b, '|', pod.Labels)
	writeMap(b, '|', pod.Spec.NodeSelector)
	b.WriteByte('|')
	if a := pod.Spec.Affinity; a != nil {
		writeAffinity(b, a)
	}
	b.WriteByte('|')
	for i := range pod.Spec.Tolerations {
		t := &pod.Spec.Tolerations[i]
		fmt.Fprintf(b, "%s/%s/%s/%s/", t.Key, t.Operator, t.Value, t.Effect)
		if t.TolerationSeconds != nil {
			b.WriteString(strconv.FormatInt(*t.TolerationSeconds, 10))
		}
		b.WriteByte(';')
	}
	b.WriteByte('|')
	for i := range pod.Spec.TopologySpreadConstraints {
		writeSpread(b, &pod.Spec.TopologySpreadConstraints[i])
	}
	b.WriteByte('|')
	for _, p := range ports {
		b.WriteString(p.String())
		b.WriteByte(';')
	}
	b.WriteByte('|')
	for _, v := range vols {
		b.Write(v.AppendKey(b.AvailableBuffer()))
		b.WriteByte(';')
	}
}

// writeRequests appends the request vector to a shape key, making it the
// class key.
func writeRequests(b *bytes.Buffer, req scheduling.Vector) {
	b.WriteByte('|')
	for _, x := range req {
		b.Write(strconv.AppendInt(b.AvailableBuffer(), x, 36))
		b.WriteByte(',')
	}
}

func writeMap(b *bytes.Buffer, sep byte, m map[string]string) {
	b.WriteByte(sep)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(m[k])
		b.WriteByte(',')
	}
}

func (s *solver) classify(pod *corev1.Pod) *class {
	pod = scheduling.WithLimitRangeDefaults(pod, s.in.LimitRanges)
	own := pod
	pod = withDefaultSpread(pod, s.in.DefaultSpread[pod.UID])
	// Most pods' class exists: their requests are only read for its key.
	if len(s.reqBuf) != s.resources.Len() {
		s.reqBuf = make(scheduling.Vector, s.resources.Len())
	}
	req := s.podVector(s.reqBuf, pod)
	ports := scheduling.PodHostPorts(pod)
	vols := s.in.VolumeRequirements[pod.UID]
	shapeKey(&s.classKeyBuf, pod, ports, vols)
	if pod != own {
		s.classKeyBuf.WriteString("|default-spread")
	}
	shapeLen := s.classKeyBuf.Len()
	writeRequests(&s.classKeyBuf, req)
	if c, ok := s.classByKey[string(s.classKeyBuf.Bytes())]; ok {
		return c
	}
	key := s.classKeyBuf.String()
	req = req.Clone()
	c := s.newClass()
	*c = class{id: len(s.classes), namespace: pod.Namespace, labels: labels.Set(pod.Labels), pod: pod,
		requests: req, ports: ports, tolerates: pod.Spec.Tolerations, defaultSpread: pod != own}
	c.size = s.sizeShare(req)
	s.classByKey[key] = c
	s.classes = append(s.classes, c)
	if proto, ok := s.shapes[key[:shapeLen]]; ok {
		s.shareVariants(c, proto)
		return c
	}
	c.proto = c
	s.shapes[key[:shapeLen]] = c
	s.buildVariants(c, vols)
	return c
}

// classBlock is how many classes newClass allocates at once.
const classBlock = 64

// newClass returns a zero class, allocated with others in a block: a
// solve makes hundreds.
func (s *solver) newClass() *class {
	if len(s.classBlock) == 0 {
		s.classBlock = make([]class, classBlock)
	}
	c := &s.classBlock[0]
	s.classBlock = s.classBlock[1:]
	return c
}

// podVector is PodRequests as a vector, summing containers directly in the
// common case (no init containers, no overhead) to avoid allocating.
// It writes into v (of the index's length), which it returns.
func (s *solver) podVector(v scheduling.Vector, pod *corev1.Pod) scheduling.Vector {
	if len(pod.Spec.InitContainers) > 0 || len(pod.Spec.Overhead) > 0 {
		return s.resources.Fill(v, scheduling.PodRequests(pod))
	}
	clear(v)
	for i := range pod.Spec.Containers {
		for name, q := range pod.Spec.Containers[i].Resources.Requests {
			if slot := s.resources.Slot(name); slot >= 0 {
				v[slot] += unitsOf(name, q)
			}
		}
	}
	v[scheduling.SlotPods] = 1
	return v
}

// sizeShare is the sum over resources (but pods) of the pod's request
// relative to the largest allocatable of that resource among all instance
// types. Summing rather than taking the largest share interleaves
// cpu-heavy and memory-heavy pods in the placement order: by the largest
// share alone every memory-heavy pod comes first on a price list with
// twice as many GiB as cores, and they pile onto the same NodeClaims,
// whose cpu then idles (BenchmarkSolveDiverse).
func (s *solver) sizeShare(req scheduling.Vector) float64 {
	share := 0.0
	for i, x := range req {
		if i == scheduling.SlotPods || s.maxAlloc[i] <= 0 {
			continue
		}
		share += float64(x) / float64(s.maxAlloc[i])
	}
	return share
}

// sortPods orders pods largest first (first-fit-decreasing by summed
// share, sizeShare), then cpu, memory, creation time, namespace/name and
// UID.
func sortPods(pods []*podInfo) {
	slices.SortStableFunc(pods, comparePods)
}

// comparePods is sortPods' order.
func comparePods(pa, pb *podInfo) int {
	if pa.class != pb.class {
		if c := cmp.Compare(pb.class.size, pa.class.size); c != 0 {
			return c
		}
		ra, rb := pa.class.requests, pb.class.requests
		if c := cmp.Compare(rb[scheduling.SlotCPU], ra[scheduling.SlotCPU]); c != 0 {
			return c
		}
		if c := cmp.Compare(rb[scheduling.SlotMemory], ra[scheduling.SlotMemory]); c != 0 {
			return c
		}
	}
	ta, tb := pa.pod.CreationTimestamp, pb.pod.CreationTimestamp
	if !ta.Equal(&tb) {
		if ta.Before(&tb) {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(pa.pod.Namespace, pb.pod.Namespace); c != 0 {
		return c
	}
	if c := cmp.Compare(pa.pod.Name, pb.pod.Name); c != 0 {
		return c
	}
	return cmp.Compare(pa.pod.UID, pb.pod.UID)
}
