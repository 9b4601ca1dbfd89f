package localcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
)

// kwok plays the kubelet of every managed Node, but it acts only on watch
// events, and gives up on a stage whose write fails with an error it does
// not take for transient. An API server whose etcd is restarting answers
// 500 "rpc error: code = Unavailable", one of those: the object then waits
// for its next change, which may never come. In one run a pod bound to a
// node during an etcd restart stayed Pending for good, so its Deployment
// stayed short of a pod and its PodDisruptionBudget blocked every drain.
// A kubelet resyncs each pod of its node every few seconds whatever the
// watch said; the resync below stands in for that. Every resyncInterval it
// lists the managed Nodes and their pods and touches (annotates
// KWOKResyncAnnotationKey with the time) each object one of kwok's stages
// should have moved on (kwokStages) and has not for resyncAfter, which
// gives kwok the event it waits for.

// KWOKResyncAnnotationKey is the annotation the resync sets, to the time
// of the touch, on an object kwok left behind.
const KWOKResyncAnnotationKey = "karp.sh/kwok-resync"

const (
	// resyncInterval is how often the resync looks.
	resyncInterval = 5 * time.Second
	// resyncAfter is how long an object may wait on a stage before it is
	// touched: longer than any stage's own delay but pod-remove's, which
	// removalDue accounts for.
	resyncAfter = 15 * time.Second
)

// resyncKWOK touches what kwok left behind every resyncInterval until ctx
// ends, logging each touch (and each failed pass) to out.
func resyncKWOK(ctx context.Context, clk clock.PassiveClock, cs kubernetes.Interface, out io.Writer) {
	tick := time.NewTicker(resyncInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := clk.Now()
		if err := resyncPass(ctx, cs, now, out); err != nil && ctx.Err() == nil {
			fmt.Fprintf(out, "%s resync pass: %v\n", now.UTC().Format(time.RFC3339), err)
		}
	}
}

// resyncPass lists the managed Nodes and their pods once and touches the
// overdue ones.
func resyncPass(ctx context.Context, cs kubernetes.Interface, now time.Time, out io.Writer) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	managed := map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Annotations[KWOKNodeAnnotationKey] != KWOKNodeAnnotationValue {
			continue
		}
		managed[n.Name] = true
		if why := nodeOverdue(n, now); why != "" {
			touch(ctx, out, now, "node", n.Name, why, func(patch []byte) error {
				_, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
				return err
			})
		}
	}
	if len(managed) == 0 {
		return nil
	}
	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!="})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !managed[p.Spec.NodeName] {
			continue
		}
		if why := podOverdue(p, now); why != "" {
			touch(ctx, out, now, "pod", p.Namespace+"/"+p.Name, why, func(patch []byte) error {
				_, err := cs.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
				return err
			})
		}
	}
	return nil
}

// touch sets the resync annotation through patch and logs it; a failure
// is logged and left to the next pass.
func touch(ctx context.Context, out io.Writer, now time.Time, kind, name, why string, patch func([]byte) error) {
	stamp := now.UTC().Format(time.RFC3339)
	body := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, KWOKResyncAnnotationKey, stamp)
	result := "touched"
	if err := patch(body); err != nil {
		if ctx.Err() != nil {
			return
		}
		result = "touch failed: " + err.Error()
	}
	fmt.Fprintf(out, "%s %s %s: %s; %s\n", stamp, kind, name, why, result)
}

// nodeOverdue says why kwok should have moved the Node on by now, or ""
// if it should not have: node-ready makes a Node Ready unless it is
// annotated karp.sh/kwok-ready=false, when node-not-ready makes it not
// Ready. A Node created less than resyncAfter ago is left to kwok, and so
// is one labelled kwok.x-k8s.io/stage=unhealthy (no stage plays on it).
func nodeOverdue(n *corev1.Node, now time.Time) string {
	if n.DeletionTimestamp != nil || now.Sub(n.CreationTimestamp.Time) < resyncAfter ||
		n.Labels[KWOKStageLabelKey] == KWOKStageUnhealthy {
		return ""
	}
	ready := corev1.ConditionUnknown
	since := n.CreationTimestamp.Time
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready, since = c.Status, c.LastTransitionTime.Time
		}
	}
	if now.Sub(since) < resyncAfter {
		return ""
	}
	notReady := n.Annotations[KWOKReadyAnnotationKey] == KWOKNotReadyValue
	switch {
	case !notReady && ready != corev1.ConditionTrue:
		return fmt.Sprintf("Ready=%s for %s", ready, now.Sub(since).Round(time.Second))
	case notReady && ready != corev1.ConditionFalse:
		return fmt.Sprintf("annotated %s=%s, Ready=%s for %s", KWOKReadyAnnotationKey, KWOKNotReadyValue, ready, now.Sub(since).Round(time.Second))
	}
	return ""
}

// podOverdue says why kwok should have moved the pod of a managed Node on
// by now, or "" if it should not have:
//   - pod-running: a bound Pending pod becomes Running (after the delay of
//     its KWOKPodReadyDelayAnnotationKey annotation);
//   - pod-ready-again: a Running pod whose Ready is False becomes Ready,
//     unless annotated karp.sh/kwok-ready=false or labelled
//     kwok.x-k8s.io/stage=unhealthy;
//   - pod-remove: a deleted pod goes at once, or when its deletion
//     timestamp comes if it has a preStop hook, or after the delay of its
//     KWOKPodDeleteDelayAnnotationKey annotation.
func podOverdue(p *corev1.Pod, now time.Time) string {
	if p.DeletionTimestamp != nil {
		due := removalDue(p)
		if now.Sub(due) < resyncAfter {
			return ""
		}
		return fmt.Sprintf("deleted, still there %s after kwok was due to remove it", now.Sub(due).Round(time.Second))
	}
	bound := p.CreationTimestamp.Time
	ready, readySince := corev1.ConditionUnknown, time.Time{}
	for _, c := range p.Status.Conditions {
		switch c.Type {
		case corev1.PodScheduled:
			if c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
				bound = c.LastTransitionTime.Time
			}
		case corev1.PodReady:
			ready, readySince = c.Status, c.LastTransitionTime.Time
		}
	}
	switch p.Status.Phase {
	case corev1.PodPending:
		if d, err := time.ParseDuration(p.Annotations[KWOKPodReadyDelayAnnotationKey]); err == nil && d > 0 {
			bound = bound.Add(d)
		}
		if now.Sub(bound) >= resyncAfter {
			return fmt.Sprintf("bound, Pending for %s", now.Sub(bound).Round(time.Second))
		}
	case corev1.PodRunning:
		// pod-ready-again plays after a delay from the pod's last change
		// (removing the annotation or label, say), which a touch starts
		// again: give it resyncAfter from the last write too.
		if ready == corev1.ConditionFalse && p.Annotations[KWOKReadyAnnotationKey] != KWOKNotReadyValue &&
			p.Labels[KWOKStageLabelKey] != KWOKStageUnhealthy && now.Sub(readySince) >= resyncAfter &&
			now.Sub(lastWrite(p)) >= resyncAfter {
			return fmt.Sprintf("Running, Ready=False for %s", now.Sub(readySince).Round(time.Second))
		}
	}
	return ""
}

// lastWrite is when the object was last written, as its managed fields
// record (zero when they record nothing).
func lastWrite(obj metav1.Object) time.Time {
	var last time.Time
	for _, mf := range obj.GetManagedFields() {
		if mf.Time != nil && mf.Time.After(last) {
			last = mf.Time.Time
		}
	}
	return last
}

// removalDue is when pod-remove should remove a deleted pod.
func removalDue(p *corev1.Pod) time.Time {
	deadline := p.DeletionTimestamp.Time
	requested := deadline
	if p.DeletionGracePeriodSeconds != nil {
		requested = deadline.Add(-time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
	}
	due := requested
	if d, err := time.ParseDuration(p.Annotations[KWOKPodDeleteDelayAnnotationKey]); err == nil && d > 0 {
		due = requested.Add(d)
	}
	for _, c := range p.Spec.Containers {
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && deadline.After(due) {
			due = deadline
		}
	}
	return due
}

// startKWOKResync runs the resync in the background with kwok's
// credentials, logging to logs/kwok-resync.log, until Stop (ctx's
// cancellation, which bounds the start-up, does not end it).
func (c *Cluster) startKWOKResync(ctx context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.layout.kubeconfig(KWOK))
	if err != nil {
		return fmt.Errorf("kwok resync: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kwok resync: %w", err)
	}
	out, err := os.OpenFile(c.layout.log("kwok-resync"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("kwok resync: %w", err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = out.Close() }()
		resyncKWOK(ctx, c.opts.Clock, cs, out)
	}()
	c.stopResync = func() { cancel(); <-done }
	return nil
}
