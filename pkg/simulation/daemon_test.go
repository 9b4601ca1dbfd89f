package simulation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/test"
)

// wantOverhead asserts the first NodeClaim's daemon overhead (pods excluded
// from the comparison when want has none).
func wantOverhead(pairs ...string) func(t *testing.T, res *Result) {
	return func(t *testing.T, res *Result) {
		t.Helper()
		want := test.ResourceList(pairs...)
		got := res.NodeClaims[0].DaemonOverhead
		for name, q := range want {
			if g := got[name]; g.Cmp(q) != 0 {
				t.Errorf("overhead %s = %s, want %s", name, g.String(), q.String())
			}
		}
		for name, q := range got {
			if _, ok := want[name]; !ok && !q.IsZero() {
				t.Errorf("overhead %s = %s, want none", name, q.String())
			}
		}
	}
}

func TestSolveDaemonSets(t *testing.T) {
	pod := onePod(func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "1500m") })
	ds := func(name string) *test.DaemonSetWrapper { return test.MakeDaemonSet(name).Requests("cpu", "1") }
	runCases(t, map[string]solveCase{
		"a DaemonSet makes the node bigger": {
			daemonSets: []*appsDaemonSet{ds("agent").Obj()}, pods: pod,
			onType: map[string]string{"p": "arm-medium"}, check: wantOverhead("cpu", "1", "pods", "1"),
		},
		"a DaemonSet for arm64 does not load amd64 nodes": {
			daemonSets: []*appsDaemonSet{ds("agent").NodeSelector(map[string]string{"kubernetes.io/arch": "arm64"}).Obj()}, pods: pod,
			onType: map[string]string{"p": "general-small"}, check: wantOverhead(),
		},
		"a DaemonSet for arm64 loads arm64 nodes": {
			daemonSets: []*appsDaemonSet{ds("agent").NodeSelector(map[string]string{"kubernetes.io/arch": "arm64"}).Obj()},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.Requests("cpu", "3500m").NodeSelector(map[string]string{"kubernetes.io/arch": "arm64"})
			}),
			reasons: map[string]string{"p": "NodePool default: no instance type has room for 3.5 cpu next to its DaemonSets (at most 3 is left after them) [InstanceTypesTooSmall]"},
		},
		"a DaemonSet with instance-type affinity counts only there": {
			daemonSets: []*appsDaemonSet{ds("agent").NodeAffinityTerm(req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "general-large")).Obj()},
			pods:       pod, onType: map[string]string{"p": "general-small"}, check: wantOverhead(),
		},
		"a DaemonSet tolerating everything lands on tainted nodes": {
			pools:      []*NodePool{taintedPool("gpu", gpuTaint)},
			daemonSets: []*appsDaemonSet{ds("agent").Toleration(corev1.Toleration{Operator: corev1.TolerationOpExists}).Obj()},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.Requests("cpu", "1500m").Toleration(corev1.Toleration{Operator: corev1.TolerationOpExists})
			}),
			onType: map[string]string{"p": "arm-medium"}, check: wantOverhead("cpu", "1", "pods", "1"),
		},
		"a DaemonSet not tolerating the taint stays off": {
			pools:      []*NodePool{taintedPool("gpu", gpuTaint)},
			daemonSets: []*appsDaemonSet{ds("agent").Obj()},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.Requests("cpu", "1500m").Toleration(corev1.Toleration{Operator: corev1.TolerationOpExists})
			}),
			onType: map[string]string{"p": "general-small"}, check: wantOverhead(),
		},
		"a DaemonSet with limits only": {
			daemonSets: []*appsDaemonSet{test.MakeDaemonSet("agent").Limits("cpu", "1").Obj()}, pods: pod,
			onType: map[string]string{"p": "arm-medium"}, check: wantOverhead("cpu", "1", "pods", "1"),
		},
		"a DaemonSet defaulted by a LimitRange": {
			daemonSets:  []*appsDaemonSet{test.MakeDaemonSet("agent").Obj()},
			limitRanges: []corev1.LimitRange{limitRange("default", nil, test.ResourceList("cpu", "1"))},
			pods:        pod, onType: map[string]string{"p": "arm-medium"}, check: wantOverhead("cpu", "1", "pods", "1"),
		},
		"a DaemonSet host port blocks the pod's": {
			daemonSets: []*appsDaemonSet{test.MakeDaemonSet("agent").HostPort(80).Obj()},
			pods:       onePod(func(w *test.PodWrapper) *test.PodWrapper { return w.HostPort(80) }),
			reasons:    map[string]string{"p": "NodePool default: host port 0.0.0.0:80/TCP is taken by a DaemonSet [HostPortConflict]"},
		},
		"a DaemonSet for another zone": {
			daemonSets: []*appsDaemonSet{ds("agent").NodeSelector(map[string]string{corev1.LabelTopologyZone: zoneA}).Obj()},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.Requests("cpu", "1500m").NodeSelector(map[string]string{corev1.LabelTopologyZone: zoneB})
			}),
			onType: map[string]string{"p": "general-small"}, check: wantOverhead(),
		},
		"a zonal DaemonSet counts while the zone is open": {
			daemonSets: []*appsDaemonSet{ds("agent").NodeSelector(map[string]string{corev1.LabelTopologyZone: zoneA}).Obj()},
			pods:       pod, check: wantOverhead("cpu", "1", "pods", "1"),
		},
		"a DaemonSet selecting a template label": {
			pools: []*NodePool{withTypes(test.MakeNodePool("labelled").Weight(2).Labels(map[string]string{"team": "x"}).Obj()),
				withTypes(test.MakeNodePool("plain").Weight(1).Obj())},
			daemonSets: []*appsDaemonSet{ds("agent").NodeSelector(map[string]string{"team": "x"}).Obj()},
			pods:       pod, inPool: map[string]string{"p": "labelled"}, check: wantOverhead("cpu", "1", "pods", "1"),
		},
		"a DaemonSet selecting a label no NodePool sets": {
			daemonSets: []*appsDaemonSet{ds("agent").NodeSelector(map[string]string{"team": "x"}).Obj()},
			pods:       pod, onType: map[string]string{"p": "general-small"}, check: wantOverhead(),
		},
		"several DaemonSets add up": {
			daemonSets: []*appsDaemonSet{ds("a").Obj(), test.MakeDaemonSet("b").Requests("cpu", "500m", "memory", "1Gi").Obj()},
			pods:       pod, check: wantOverhead("cpu", "1500m", "memory", "1Gi", "pods", "2"),
		},
		"DaemonSet with ORed terms lands if any matches": {
			daemonSets: []*appsDaemonSet{ds("agent").NodeAffinityTerm(req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "s390x")).
				NodeAffinityTerm(req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")).Obj()},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.Requests("cpu", "1500m").NodeSelector(map[string]string{corev1.LabelArchStable: "amd64"})
			}),
			onType: map[string]string{"p": "general-medium"}, check: wantOverhead("cpu", "1", "pods", "1"),
		},
	})
}
