package state_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestIsProvisionable(t *testing.T) {
	scheduledFalse := func(reason string) []corev1.PodCondition {
		return []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason}}
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"unschedulable pending pod": {pod: test.MakePod("p").Obj(), want: true},
		"bound":                     {pod: test.MakePod("p").NodeName("n").Obj()},
		"never tried by the scheduler": {pod: func() *corev1.Pod {
			p := test.MakePod("p").Obj()
			p.Status.Conditions = nil
			return p
		}()},
		"scheduling gated": {pod: func() *corev1.Pod {
			p := test.MakePod("p").Obj()
			p.Status.Conditions = scheduledFalse(corev1.PodReasonSchedulingGated)
			return p
		}()},
		"nominated by the scheduler": {pod: func() *corev1.Pod {
			p := test.MakePod("p").Obj()
			p.Status.NominatedNodeName = "n"
			return p
		}()},
		"hinted by karp": {pod: func() *corev1.Pod {
			p := test.MakePod("p").Obj()
			p.Status.NominatedNodeName = "n"
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: state.SchedulerHintCondition,
				Status: corev1.ConditionTrue, Message: state.SchedulerHintMessage("n")})
			return p
		}(), want: true},
		"hinted by karp, then nominated elsewhere by the scheduler": {pod: func() *corev1.Pod {
			p := test.MakePod("p").Obj()
			p.Status.NominatedNodeName = "preempting-on-m"
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: state.SchedulerHintCondition,
				Status: corev1.ConditionTrue, Message: state.SchedulerHintMessage("n")})
			return p
		}()},
		"DaemonSet pod":  {pod: test.MakePod("p").Owner("DaemonSet", "ds", "u1").Obj()},
		"mirror pod":     {pod: test.MakePod("p").Owner("Node", "n", "u2").Obj()},
		"ReplicaSet pod": {pod: test.MakePod("p").Owner("ReplicaSet", "rs", "u3").Obj(), want: true},
		"terminating":    {pod: test.MakePod("p").Terminating(time.Unix(1, 0)).Obj()},
		"succeeded":      {pod: test.MakePod("p").Phase(corev1.PodSucceeded).Obj()},
		"failed":         {pod: test.MakePod("p").Phase(corev1.PodFailed).Obj()},
		"scheduled true": {pod: func() *corev1.Pod {
			p := test.MakePod("p").Obj()
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
			return p
		}()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := state.IsProvisionable(tc.pod); got != tc.want {
				t.Errorf("IsProvisionable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIsAwaitingScheduler(t *testing.T) {
	fresh := func(mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := test.MakePod("p").Obj()
		p.Status.Conditions = nil
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"new pending pod": {pod: fresh(), want: true},
		"new ReplicaSet pod": {pod: fresh(func(p *corev1.Pod) {
			p.OwnerReferences = test.MakePod("x").Owner("ReplicaSet", "rs", "u").Obj().OwnerReferences
		}), want: true},
		"explicitly the default scheduler": {pod: fresh(func(p *corev1.Pod) { p.Spec.SchedulerName = corev1.DefaultSchedulerName }), want: true},
		"failed by the scheduler":          {pod: test.MakePod("p").Obj()},
		"another scheduler's":              {pod: fresh(func(p *corev1.Pod) { p.Spec.SchedulerName = "batch-scheduler" })},
		"scheduling gated": {pod: fresh(func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
		})},
		"bound":       {pod: fresh(func(p *corev1.Pod) { p.Spec.NodeName = "n" })},
		"nominated":   {pod: fresh(func(p *corev1.Pod) { p.Status.NominatedNodeName = "n" })},
		"terminating": {pod: test.MakePod("p").Terminating(time.Unix(1, 0)).Obj()},
		"DaemonSet pod": {pod: fresh(func(p *corev1.Pod) {
			p.OwnerReferences = test.MakePod("x").Owner("DaemonSet", "ds", "u").Obj().OwnerReferences
		})},
		"succeeded": {pod: fresh(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := state.IsAwaitingScheduler(tc.pod); got != tc.want {
				t.Errorf("IsAwaitingScheduler = %v, want %v", got, tc.want)
			}
			if state.IsAwaitingScheduler(tc.pod) && state.IsProvisionable(tc.pod) {
				t.Error("a pod is both awaiting the scheduler and provisionable")
			}
		})
	}
}
