package simulation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

func TestVolumeTerms(t *testing.T) {
	wait, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	zoneTerm := func(zones ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...)}}
	}
	topology := func(zones ...string) corev1.TopologySelectorTerm {
		return corev1.TopologySelectorTerm{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: zones}}}
	}
	cases := map[string]struct {
		got  []scheduling.Requirements
		want []string // zones allowed by each alternative
	}{
		"volume without node affinity": {
			got: PersistentVolumeTerms(&corev1.PersistentVolume{}),
		},
		"volume pinned to zone a or b by two terms": {
			got: PersistentVolumeTerms(&corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{
				Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{zoneTerm(zoneA), zoneTerm(zoneB)}}}}}),
			want: []string{zoneA, zoneB},
		},
		"WaitForFirstConsumer class with allowed topologies": {
			got:  StorageClassTerms(&storagev1.StorageClass{VolumeBindingMode: &wait, AllowedTopologies: []corev1.TopologySelectorTerm{topology(zoneC)}}),
			want: []string{zoneC},
		},
		"Immediate class: the volume binds before scheduling": {
			got: StorageClassTerms(&storagev1.StorageClass{VolumeBindingMode: &immediate, AllowedTopologies: []corev1.TopologySelectorTerm{topology(zoneC)}}),
		},
		"two volumes: only the common zone is left": {
			got: CombineVolumeTerms(
				[]scheduling.Requirements{scheduling.NewNodeSelectorRequirements(zoneTerm(zoneA, zoneB).MatchExpressions...)},
				[]scheduling.Requirements{scheduling.NewNodeSelectorRequirements(zoneTerm(zoneB, zoneC).MatchExpressions...)}),
			want: []string{zoneB},
		},
		"a volume without topology leaves the others": {
			got:  CombineVolumeTerms([]scheduling.Requirements{scheduling.NewNodeSelectorRequirements(zoneTerm(zoneA).MatchExpressions...)}, nil),
			want: []string{zoneA},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if len(tc.got) != len(tc.want) {
				t.Fatalf("%d alternatives (%v), want %d", len(tc.got), tc.got, len(tc.want))
			}
			for i, zone := range tc.want {
				r := tc.got[i].Get(corev1.LabelTopologyZone)
				if r == nil || r.Len() != 1 || !r.Has(zone) {
					t.Errorf("alternative %d allows zones %v, want only %s", i, r, zone)
				}
			}
		})
	}
}

func TestCombineVolumeTermsKeepsImpossibleVolumesVisible(t *testing.T) {
	a := scheduling.NewNodeSelectorRequirements(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneA))
	b := scheduling.NewNodeSelectorRequirements(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneB))
	got := CombineVolumeTerms([]scheduling.Requirements{a}, []scheduling.Requirements{b})
	if len(got) != 1 || got[0].IsSatisfiable() {
		t.Fatalf("volumes in zones a and b combine to %v, want one unsatisfiable alternative", got)
	}
}
