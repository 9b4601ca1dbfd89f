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
// Pods without claims of a limited driver cost nothing: podInfo.volumes is
// nil for them and the check below is skipped. Volumes are per pod (each
// replica of a StatefulSet has its own claims), so they are not part of a
// pod's class.

// addVolumes records the claims of the node's bound pods on t, when the
// node has limits.
func (s *solver) addVolumes(t *target) {
	n := t.existing
	if n.VolumeLimits == nil {
		return
	}
	t.volumes = scheduling.Volumes{}
	for _, p := range n.Pods {
		if !terminal(p) {
			t.volumes.Insert(s.in.PodVolumes[p.UID])
		}
	}
}

// volumesFit reports whether the pod's claims stay within t's limits.
func volumesFit(t *target, p *podInfo) bool {
	if p.volumes == nil || t.volumes == nil {
		return true
	}
	_, exceeded := t.existing.VolumeLimits.ExceededBy(t.volumes, p.volumes)
	return !exceeded
}

// attachVolumes records the pod's claims on t once it is placed there.
func attachVolumes(t *target, p *podInfo) {
	if p.volumes != nil && t.volumes != nil {
		t.volumes.Insert(p.volumes)
	}
}
