package solverinput_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karp-autoscaler/karp/pkg/solverinput"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// world creates, in the API server (claims named vt-*, apart from the
// other tests' in the same namespace), a volume pinned to zone a or b, a
// claim bound to it, a claim of a WaitForFirstConsumer class allowed only
// in zone b, a claim of an Immediate class, and claims whose volume or
// class does not exist.
func world(t *testing.T) {
	t.Helper()
	zoneTerm := func(zones ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones}}}
	}
	class := func(name string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "example.com/csi", VolumeBindingMode: &mode,
			AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
				{Key: corev1.LabelTopologyZone, Values: []string{"zone-b"}}}}}}
	}
	claim := test.MakePersistentVolumeClaim
	env.Create(t,
		test.MakePersistentVolume("vt-pinned").
			Source(corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "vol-1"}}).
			NodeAffinity(zoneTerm("zone-a"), zoneTerm("zone-b")).Obj(),
		class("vt-wait", storagev1.VolumeBindingWaitForFirstConsumer),
		class("vt-immediate", storagev1.VolumeBindingImmediate),
		claim("vt-bound").VolumeName("vt-pinned").Obj(),
		claim("vt-waiting").StorageClass("vt-wait").Obj(),
		claim("vt-immediate").StorageClass("vt-immediate").Obj(),
		claim("vt-web-0-scratch").StorageClass("vt-wait").Obj(),
		claim("vt-lost-volume").VolumeName("vt-gone").Obj(),
		claim("vt-lost-class").StorageClass("vt-gone").Obj(),
	)
}

// claimsPod mounts the named claims, and a generic ephemeral volume for each
// name prefixed with "ephemeral:".
func claimsPod(claims ...string) *corev1.Pod {
	p := test.MakePod("vt-web-0").Volume(corev1.Volume{Name: "config",
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}})
	for _, c := range claims {
		if vol, ok := strings.CutPrefix(c, "ephemeral:"); ok {
			p.Volume(corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}})
		} else {
			p.ClaimVolumes(c)
		}
	}
	return p.Obj()
}

func TestPodTerms(t *testing.T) {
	ctx := t.Context()
	world(t)
	cases := map[string]struct {
		pod      *corev1.Pod
		want     [][]string // zones allowed by each alternative
		notFound string     // the missing object the error names
	}{
		"no claims": {pod: claimsPod()},
		"bound claim: the volume's node affinity":       {pod: claimsPod("vt-bound"), want: [][]string{{"zone-a"}, {"zone-b"}}},
		"unbound claim of a WaitForFirstConsumer class": {pod: claimsPod("vt-waiting"), want: [][]string{{"zone-b"}}},
		"unbound claim of an Immediate class":           {pod: claimsPod("vt-immediate")},
		"generic ephemeral volume: the claim it makes":  {pod: claimsPod("ephemeral:scratch"), want: [][]string{{"zone-b"}}},
		"two claims: only the common zone":              {pod: claimsPod("vt-bound", "vt-waiting"), want: [][]string{{"zone-b"}}},
		"missing claim":                                 {pod: claimsPod("vt-bound", "vt-nope"), notFound: "persistentvolumeclaim default/vt-nope"},
		"claim bound to a missing volume":               {pod: claimsPod("vt-lost-volume"), notFound: "persistentvolume vt-gone"},
		"claim of a missing class":                      {pod: claimsPod("vt-lost-class"), notFound: "storageclass vt-gone"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := solverinput.VolumeTerms(ctx, env.Client, tc.pod)
			if tc.notFound != "" {
				if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), tc.notFound) {
					t.Fatalf("error = %v, want NotFound naming %s", err, tc.notFound)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d alternatives (%v), want %d", len(got), got, len(tc.want))
			}
			for i, zones := range tc.want {
				r := got[i].Get(corev1.LabelTopologyZone)
				if r == nil || !slices.Equal(r.Values(), zones) {
					t.Errorf("alternative %d allows zones %v, want %v", i, r, zones)
				}
			}
		})
	}
}
