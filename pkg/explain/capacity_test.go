package explain

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/operator"
	"github.com/karp-autoscaler/karp/pkg/options"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// engineWithGates builds the engine as a controller run with gates (nil:
// the cluster's objects ask for their gates).
func (c *cluster) engineWithGates(t *testing.T, gates *options.FeatureGates) *Engine {
	t.Helper()
	types, err := kwok.LoadInstanceTypes("", nil)
	if err != nil {
		t.Fatal(err)
	}
	scheme := operator.NewScheme()
	reader, err := NewObjectReader(scheme, c.objs)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(t.Context(), reader, scheme, Options{InstanceTypes: types, Clock: clocktesting.NewFakeClock(now), FeatureGates: gates})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

const widget corev1.ResourceName = "example.com/widget"

// TestNodeOverlaysApply: explain answers with the cluster's NodeOverlays
// applied, as the controller with the NodeOverlay gate on: a pod asking for
// an extended resource only an overlay gives is launched for, the NodePool
// names the overlay and the one refused; with the gate off, the pod stays
// pending.
func TestNodeOverlaysApply(t *testing.T) {
	build := func() *cluster {
		c := newCluster()
		c.objs = append(c.objs,
			test.MakeNodeOverlay("widgets").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge", "m5.2xlarge").
				Capacity(corev1.ResourceList{widget: resource.MustParse("4")}).Obj(),
			// Runtime validation refuses an adjustment and a price together.
			test.MakeNodeOverlay("both").Price("1").PriceAdjustment("+10%").Obj())
		c.pod("w", "", "1", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[widget] = resource.MustParse("1")
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{widget: resource.MustParse("1")}
		})
		return c
	}
	off := options.DefaultFeatureGates()
	for name, tc := range map[string]struct {
		gates    *options.FeatureGates
		decision string
		overlays int
	}{
		"gates as the objects ask": {decision: DecisionNewNodeClaim, overlays: 2},
		"NodeOverlay off":          {gates: &off, decision: DecisionUnschedulable},
	} {
		t.Run(name, func(t *testing.T) {
			e := build().engineWithGates(t, tc.gates)
			r, err := e.Pod(t.Context(), "w")
			if err != nil {
				t.Fatal(err)
			}
			if r.Decision != tc.decision {
				t.Fatalf("decision %s (%s), want %s", r.Decision, r.Message, tc.decision)
			}
			np, err := e.NodePool(t.Context(), "default")
			if err != nil {
				t.Fatal(err)
			}
			if len(np.Overlays) != tc.overlays {
				t.Fatalf("overlays %+v, want %d", np.Overlays, tc.overlays)
			}
			if tc.overlays == 0 {
				return
			}
			both, widgets := np.Overlays[0], np.Overlays[1]
			if both.Name != "both" || both.Applied || both.Message == "" {
				t.Errorf("overlay both: %+v, want refused with why", both)
			}
			if widgets.Name != "widgets" || !widgets.Applied || widgets.InstanceTypes != 2 {
				t.Errorf("overlay widgets: %+v, want applied to 2 instance types", widgets)
			}
			if r.Target == nil || (r.Target.InstanceType != "m5.xlarge" && r.Target.InstanceType != "m5.2xlarge") {
				t.Errorf("target %+v, want one of the overlaid types", r.Target)
			}
		})
	}
}

// TestCapacityBuffersKeepRoom: explain's plan keeps the room of the
// cluster's CapacityBuffers, as the provisioner does with the gate on, and
// the NodePool report says so without listing the virtual pods as pending.
func TestCapacityBuffersKeepRoom(t *testing.T) {
	c := newCluster()
	tmpl := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "warm-shape"},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "warm"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}}}}}
	warm := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "warm"},
		Spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "warm-shape"}, Replicas: ptr.To[int32](2)}}
	missing := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cold"},
		Spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "nope"}, Replicas: ptr.To[int32](1)}}
	c.objs = append(c.objs, tmpl, warm, missing)

	off := options.DefaultFeatureGates()
	for name, tc := range map[string]struct {
		gates   *options.FeatureGates
		planned int
	}{
		"gates as the objects ask": {planned: 2},
		"CapacityBuffer off":       {gates: &off},
	} {
		t.Run(name, func(t *testing.T) {
			np, err := c.engineWithGates(t, tc.gates).NodePool(t.Context(), "default")
			if err != nil {
				t.Fatal(err)
			}
			if len(np.Pending) != 0 {
				t.Errorf("pending %v, want none (buffer room is not a pending pod)", np.Pending)
			}
			if tc.gates != nil {
				if len(np.Buffers) != 0 {
					t.Errorf("buffers %+v with the gate off, want none", np.Buffers)
				}
				return
			}
			if len(np.Buffers) != 2 {
				t.Fatalf("buffers %+v, want cold and warm", np.Buffers)
			}
			cold, w := np.Buffers[0], np.Buffers[1]
			if cold.Name != "default/cold" || cold.Ready || cold.Message == "" {
				t.Errorf("cold: %+v, want not ready with why", cold)
			}
			if w.Name != "default/warm" || !w.Ready || w.Replicas != 2 || w.Planned != tc.planned {
				t.Errorf("warm: %+v, want ready, 2 replicas, %d planned in new nodes", w, tc.planned)
			}
		})
	}
}
