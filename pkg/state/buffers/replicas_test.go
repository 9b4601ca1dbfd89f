package buffers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
)

func TestDesiredReplicas(t *testing.T) {
	// One pod asks for 500m cpu, 1Gi memory (and pods: 1).
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		corev1.ResourcePods: resource.MustParse("1")}
	limits := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	tests := map[string]struct {
		spec     autoscalingv1beta1.CapacityBufferSpec
		scalable *int32 // the scalable object's replicas; nil for a PodTemplate
		want     int32
	}{
		"nothing set":                        {want: 0},
		"replicas":                           {spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](3)}, want: 3},
		"zero replicas":                      {spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](0)}, want: 0},
		"percentage rounds up":               {spec: autoscalingv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](20)}, scalable: ptr.To[int32](11), want: 3},
		"percentage exact":                   {spec: autoscalingv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](20)}, scalable: ptr.To[int32](10), want: 2},
		"small percentage gives at least 1":  {spec: autoscalingv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](1)}, scalable: ptr.To[int32](3), want: 1},
		"percentage of no replicas":          {spec: autoscalingv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](50)}, scalable: ptr.To[int32](0), want: 0},
		"percentage without a scalable":      {spec: autoscalingv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](50)}, want: 0},
		"percentage above 100":               {spec: autoscalingv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](250)}, scalable: ptr.To[int32](2), want: 5},
		"replicas larger than percentage":    {spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](4), Percentage: ptr.To[int32](10)}, scalable: ptr.To[int32](10), want: 4},
		"percentage larger than replicas":    {spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](1), Percentage: ptr.To[int32](50)}, scalable: ptr.To[int32](10), want: 5},
		"limits alone":                       {spec: autoscalingv1beta1.CapacityBufferSpec{Limits: limits("cpu", "2")}, want: 4},
		"limits alone, smallest resource":    {spec: autoscalingv1beta1.CapacityBufferSpec{Limits: limits("cpu", "2", "memory", "3Gi")}, want: 3},
		"limits round down":                  {spec: autoscalingv1beta1.CapacityBufferSpec{Limits: limits("cpu", "1999m")}, want: 3},
		"limits exact in milli-units":        {spec: autoscalingv1beta1.CapacityBufferSpec{Limits: limits("cpu", "1500m")}, want: 3},
		"limits cap replicas":                {spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](10), Limits: limits("cpu", "2")}, want: 4},
		"limits above replicas":              {spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](2), Limits: limits("cpu", "100")}, want: 2},
		"limits cap percentage":              {spec: autoscalingv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](100), Limits: limits("memory", "2Gi")}, scalable: ptr.To[int32](10), want: 2},
		"limits on a resource not requested": {spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](5), Limits: limits("nvidia.com/gpu", "1")}, want: 5},
		"only unrequested limits":            {spec: autoscalingv1beta1.CapacityBufferSpec{Limits: limits("nvidia.com/gpu", "1")}, want: 0},
		"a pods limit counts pods":           {spec: autoscalingv1beta1.CapacityBufferSpec{Limits: limits("pods", "7")}, want: 7},
		"limits smaller than one pod":        {spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](3), Limits: limits("cpu", "100m")}, want: 0},
		"huge limits stay in int32":          {spec: autoscalingv1beta1.CapacityBufferSpec{Limits: limits("memory", "8Ei")}, want: 2147483647},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := DesiredReplicas(tc.spec, requests, tc.scalable); got != tc.want {
				t.Errorf("DesiredReplicas = %d, want %d", got, tc.want)
			}
		})
	}
}
