package simulation

import "github.com/karp-autoscaler/karp/pkg/scheduling"

// CSI volume limits (kube-scheduler's NodeVolumeLimits, as upstream
// Karpenter applies it): a node attaches at most its CSINode's
// allocatable count of volumes per CSI driver, so a pod whose claims would
// take an existing node over that count does not go there; it goes to
// another node or to a new NodeClaim.
//
// Only existing and in-flight nodes are checked, and only those whose
// CSINode reported limits (Node.VolumeLimits). A NodeClaim this solve
// opens has no CSINode yet, so its limits are unknown and it takes any
// number of claims, as upstream: should the pods' claims outnumber what
// the launched node can attach, kube-scheduler leaves the excess pending
// and the next pass, which then sees the node's CSINode, places them
// elsewhere.
//
// Pods without claims of a limited driver cost nothing, and a solve with
// no limited node does no lookup at all. Volumes are per pod (each
// replica of a StatefulSet has its own claims), so they are not part of a
// pod's class; they live beside the solver's pods and targets, not in
// them, so solves without limits carry nothing extra per pod.

// addVolumes records the claims of the node's bound pods on t, when the
// node has limits.
func (s *solver) addVolumes(t *target) {
	n := t.existing
	if n.VolumeLimits == nil {
		return
	}
	used := scheduling.Volumes{}
	for _, p := range n.Pods {
		if !terminal(p) {
			used.Insert(s.in.PodVolumes[p.UID])
		}
	}
	if s.attached == nil {
		s.attached = map[*target]scheduling.Volumes{}
	}
	s.attached[t] = used
}

// podVolumes are the claims p attaches, nil when no node is limited.
func (s *solver) podVolumes(p *podInfo) scheduling.Volumes {
	if s.attached == nil {
		return nil
	}
	return s.in.PodVolumes[p.pod.UID]
}

// volumesFit reports whether claims vols stay within t's limits (callers
// skip it for pods without claims).
func (s *solver) volumesFit(t *target, vols scheduling.Volumes) bool {
	used, limited := s.attached[t]
	if !limited {
		return true
	}
	_, exceeded := t.existing.VolumeLimits.ExceededBy(used, vols)
	return !exceeded
}

// attach records vols on t once a pod is placed there.
func (s *solver) attach(t *target, vols scheduling.Volumes) {
	if used, limited := s.attached[t]; limited && vols != nil {
		used.Insert(vols)
	}
}
