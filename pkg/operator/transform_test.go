package operator

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestTransformPodKeepsWhatKarpReads(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := test.MakePod("web").Labels(map[string]string{"app": "web"}).Requests("cpu", "1", "memory", "1Gi").
		Toleration(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists}).
		Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, map[string]string{"app": "web"}).
		PodAntiAffinity(corev1.LabelHostname, map[string]string{"app": "web"}).HostPort(8080).Obj()
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	pod.Annotations = map[string]string{"karpenter.sh/do-not-disrupt": "true"}
	pod.Spec.Containers[0].Image = "nginx:1.27"
	pod.Spec.Containers[0].Command = []string{"nginx", "-g", "daemon off;"}
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "production"}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{PeriodSeconds: 10}
	pod.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always, Args: []string{"--port=15001"},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web"}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
		{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644)}}},
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
	}
	pod.Status = corev1.PodStatus{
		Phase:             corev1.PodRunning,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		StartTime:         ptr.To(metav1.Now()),
		ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true}},
	}
	want := pod.DeepCopy()

	out, err := newPodTransform(newPodInterner())(pod)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	// Kept: everything karp reads.
	want.ManagedFields = nil
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"metadata", got.ObjectMeta, want.ObjectMeta},
		{"affinity", got.Spec.Affinity, want.Spec.Affinity},
		{"tolerations", got.Spec.Tolerations, want.Spec.Tolerations},
		{"spread", got.Spec.TopologySpreadConstraints, want.Spec.TopologySpreadConstraints},
		{"resources", got.Spec.Containers[0].Resources, want.Spec.Containers[0].Resources},
		{"ports", got.Spec.Containers[0].Ports, want.Spec.Containers[0].Ports},
		{"image", got.Spec.Containers[0].Image, want.Spec.Containers[0].Image},
		{"sidecar", got.Spec.InitContainers[0].RestartPolicy, want.Spec.InitContainers[0].RestartPolicy},
		{"sidecar resources", got.Spec.InitContainers[0].Resources, want.Spec.InitContainers[0].Resources},
		{"claim", got.Spec.Volumes[0], want.Spec.Volumes[0]},
		{"ephemeral", got.Spec.Volumes[1], want.Spec.Volumes[1]},
		{"phase", got.Status.Phase, want.Status.Phase},
		{"conditions", got.Status.Conditions, want.Status.Conditions},
		{"start", got.Status.StartTime, want.Status.StartTime},
	} {
		if !equality.Semantic.DeepEqual(c.got, c.want) {
			t.Errorf("%s changed: got %+v, want %+v", c.what, c.got, c.want)
		}
	}
	// Dropped: what only the kubelet reads.
	web := got.Spec.Containers[0]
	if web.Command != nil || web.Env != nil || web.VolumeMounts != nil || web.LivenessProbe != nil || got.Spec.InitContainers[0].Args != nil {
		t.Errorf("container kept kubelet-only fields: %+v", web)
	}
	if got.Spec.Volumes[2].Projected != nil || got.Spec.Volumes[3].ConfigMap != nil || got.Spec.Volumes[2].Name != "token" {
		t.Errorf("volumes: %+v, want the token and config sources dropped, names kept", got.Spec.Volumes)
	}
	if got.Status.ContainerStatuses != nil {
		t.Errorf("container statuses kept: %+v", got.Status.ContainerStatuses)
	}
}

func TestTransformPodHandlesTombstonesAndOtherKinds(t *testing.T) {
	pod := test.MakePod("gone").Obj()
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	tombstone := toolscache.DeletedFinalStateUnknown{Key: "default/gone", Obj: pod}
	out, err := newPodTransform(newPodInterner())(tombstone)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.(toolscache.DeletedFinalStateUnknown); !ok || pod.Spec.Containers[0].Env != nil {
		t.Errorf("tombstone: got %T, env %v; want the tombstone back with its pod slimmed", out, pod.Spec.Containers[0].Env)
	}
	node := test.MakeNode("n").Obj()
	node.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	if out, err := newPodTransform(newPodInterner())(node); err != nil || out.(*corev1.Node).ManagedFields != nil {
		t.Errorf("a non-pod: %v, managed fields %v", err, out.(*corev1.Node).ManagedFields)
	}
}

// TestSlimWorkloadKeepsWhatRolloutBudgetsRead: the cached Deployments,
// ReplicaSets and StatefulSets keep their selector, replicas, strategy,
// owners and template labels, and lose the template's pod spec.
func TestSlimWorkloadKeepsWhatRolloutBudgetsRead(t *testing.T) {
	d := test.MakeDeployment("web").Replicas(4).Recreate().Obj()
	d.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	rs := test.ReplicaSetOf(d, "h1")
	sts := test.MakeStatefulSet("db").Replicas(3).Obj()
	sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	for name, tc := range map[string]struct {
		in       any
		kept     func(any) bool
		template func(any) *corev1.PodTemplateSpec
	}{
		"Deployment": {d.DeepCopy(), func(o any) bool {
			got := o.(*appsv1.Deployment)
			return *got.Spec.Replicas == 4 && got.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType &&
				got.Spec.Selector.MatchLabels["app"] == "web" && got.ManagedFields == nil
		}, func(o any) *corev1.PodTemplateSpec { return &o.(*appsv1.Deployment).Spec.Template }},
		"ReplicaSet": {rs.DeepCopy(), func(o any) bool {
			got := o.(*appsv1.ReplicaSet)
			return *got.Spec.Replicas == 4 && len(got.OwnerReferences) == 1 && got.Spec.Selector.MatchLabels["pod-template-hash"] == "h1"
		}, func(o any) *corev1.PodTemplateSpec { return &o.(*appsv1.ReplicaSet).Spec.Template }},
		"StatefulSet": {toolscache.DeletedFinalStateUnknown{Obj: sts.DeepCopy()}, func(o any) bool {
			got := o.(toolscache.DeletedFinalStateUnknown).Obj.(*appsv1.StatefulSet)
			return *got.Spec.Replicas == 3 && got.Spec.VolumeClaimTemplates == nil
		}, func(o any) *corev1.PodTemplateSpec {
			return &o.(toolscache.DeletedFinalStateUnknown).Obj.(*appsv1.StatefulSet).Spec.Template
		}},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := slimWorkload(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.kept(out) {
				t.Errorf("transformed %s lost what karp reads: %+v", name, out)
			}
			tmpl := tc.template(out)
			if len(tmpl.Spec.Containers) != 0 || tmpl.Labels["app"] == "" {
				t.Errorf("template = %+v, want its labels without its pod spec", tmpl)
			}
		})
	}
}
