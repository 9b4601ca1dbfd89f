package simulation

import (
	"encoding/json"
	"sort"

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
	size      float64  // dominant share, for sorting
}

// variant is one relaxation level of a class: its node requirements and the
// constraints treated as required at that level.
type variant struct {
	id          int
	class       *class
	reqs        scheduling.Requirements
	strictPNS   bool // PreferNoSchedule taints must be tolerated
	constraints []*constraint
	pinKeys     []int // non-hostname topology keys whose domain must be fixed
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
	self       bool
	universe   []dom
	ready      bool
}

// podInfo is a pod being placed.
type podInfo struct {
	pod    *corev1.Pod
	class  *class
	index  int
	status *scheduling.Status
}

// classKey is the JSON of everything that affects where a pod may go.
type classKey struct {
	NS     string                            `json:"n"`
	Labels map[string]string                 `json:"l,omitempty"`
	Req    scheduling.Vector                 `json:"r"`
	Sel    map[string]string                 `json:"s,omitempty"`
	Aff    *corev1.Affinity                  `json:"a,omitempty"`
	Tol    []corev1.Toleration               `json:"t,omitempty"`
	TSC    []corev1.TopologySpreadConstraint `json:"c,omitempty"`
	Ports  []scheduling.HostPort             `json:"p,omitempty"`
	Vol    []string                          `json:"v,omitempty"`
}

func (s *solver) classify(pod *corev1.Pod) *class {
	pod = scheduling.WithLimitRangeDefaults(pod, s.in.LimitRanges)
	req := s.idx.Vector(scheduling.PodRequests(pod))
	ports := scheduling.PodHostPorts(pod)
	var vols []string
	for _, alt := range s.in.VolumeRequirements[pod.UID] {
		vols = append(vols, alt.String())
	}
	key, _ := json.Marshal(classKey{NS: pod.Namespace, Labels: pod.Labels, Req: req, Sel: pod.Spec.NodeSelector,
		Aff: pod.Spec.Affinity, Tol: pod.Spec.Tolerations, TSC: pod.Spec.TopologySpreadConstraints, Ports: ports, Vol: vols})
	if c, ok := s.classByKey[string(key)]; ok {
		return c
	}
	c := &class{id: len(s.classes), namespace: pod.Namespace, labels: labels.Set(pod.Labels), pod: pod,
		requests: req, ports: ports, tolerates: pod.Spec.Tolerations}
	c.size = s.dominantShare(req)
	s.classByKey[string(key)] = c
	s.classes = append(s.classes, c)
	s.buildVariants(c, s.in.VolumeRequirements[pod.UID])
	return c
}

// dominantShare is the pod's largest request relative to the largest
// allocatable of that resource among all instance types.
func (s *solver) dominantShare(req scheduling.Vector) float64 {
	share := 0.0
	for i, x := range req {
		if i == scheduling.SlotPods || s.maxAlloc[i] <= 0 {
			continue
		}
		if f := float64(x) / float64(s.maxAlloc[i]); f > share {
			share = f
		}
	}
	return share
}

// sortPods orders pods largest first (first-fit-decreasing by dominant
// resource), then cpu, memory, creation time, namespace/name and UID.
func sortPods(pods []*podInfo) {
	sort.SliceStable(pods, func(a, b int) bool {
		pa, pb := pods[a], pods[b]
		if pa.class.size != pb.class.size {
			return pa.class.size > pb.class.size
		}
		ra, rb := pa.class.requests, pb.class.requests
		if ra[scheduling.SlotCPU] != rb[scheduling.SlotCPU] {
			return ra[scheduling.SlotCPU] > rb[scheduling.SlotCPU]
		}
		if ra[scheduling.SlotMemory] != rb[scheduling.SlotMemory] {
			return ra[scheduling.SlotMemory] > rb[scheduling.SlotMemory]
		}
		ta, tb := pa.pod.CreationTimestamp, pb.pod.CreationTimestamp
		if !ta.Equal(&tb) {
			return ta.Before(&tb)
		}
		if pa.pod.Namespace != pb.pod.Namespace {
			return pa.pod.Namespace < pb.pod.Namespace
		}
		if pa.pod.Name != pb.pod.Name {
			return pa.pod.Name < pb.pod.Name
		}
		return pa.pod.UID < pb.pod.UID
	})
}
