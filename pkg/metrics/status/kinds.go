package status

import (
	"context"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Kind is one kind whose status conditions and termination are reported.
type Kind struct {
	// name is the lower-case kind that prefixes the metric names.
	name string
	// gk labels the deprecated series (group, kind).
	gk schema.GroupKind
	// labelKeys are the object label keys added as metric labels, in order.
	labelKeys []string
	// deprecated also reports into the kind-agnostic series.
	deprecated bool
	// buckets of the kind's histograms; prometheus.DefBuckets when nil.
	buckets []float64

	newObject  func() client.Object
	list       func(ctx context.Context, r client.Reader) ([]client.Object, error)
	conditions func(client.Object) []metav1.Condition
}

// upstreamBuckets are the histogram buckets upstream gives its NodeClaim,
// NodePool and Node status controllers: 0.5s to 8192s.
var upstreamBuckets = prometheus.ExponentialBuckets(0.5, 2, 15)

// kind builds a Kind over the typed object T and its list L.
func kind[T client.Object, L client.ObjectList](name string, gk schema.GroupKind, newObject func() T, newList func() L,
	items func(L) []T, conditions func(T) []metav1.Condition) Kind {
	return Kind{
		name: name, gk: gk,
		newObject: func() client.Object { return newObject() },
		list: func(ctx context.Context, r client.Reader) ([]client.Object, error) {
			l := newList()
			if err := r.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
				return nil, err
			}
			objs := items(l)
			out := make([]client.Object, len(objs))
			for i, o := range objs {
				out[i] = o
			}
			return out, nil
		},
		conditions: func(o client.Object) []metav1.Condition { return conditions(o.(T)) },
	}
}

// NodeClaims reports NodeClaims, labelled by the NodeClaim label keys
// labelKeys, as upstream's (the NodeClass label of each kind the provider
// supports, then karpenter.sh/nodepool), with the deprecated series.
func NodeClaims(labelKeys []string) Kind {
	k := kind("nodeclaim", schema.GroupKind{Group: karpv1.Group, Kind: "NodeClaim"},
		func() *karpv1.NodeClaim { return &karpv1.NodeClaim{} },
		func() *karpv1.NodeClaimList { return &karpv1.NodeClaimList{} },
		func(l *karpv1.NodeClaimList) []*karpv1.NodeClaim { return pointers(l.Items) },
		func(nc *karpv1.NodeClaim) []metav1.Condition { return nc.Status.Conditions })
	k.labelKeys, k.deprecated, k.buckets = labelKeys, true, upstreamBuckets
	return k
}

// NodePools reports NodePools, with the deprecated series, as upstream.
func NodePools() Kind {
	k := kind("nodepool", schema.GroupKind{Group: karpv1.Group, Kind: "NodePool"},
		func() *karpv1.NodePool { return &karpv1.NodePool{} },
		func() *karpv1.NodePoolList { return &karpv1.NodePoolList{} },
		func(l *karpv1.NodePoolList) []*karpv1.NodePool { return pointers(l.Items) },
		func(np *karpv1.NodePool) []metav1.Condition { return np.Status.Conditions })
	k.deprecated, k.buckets = true, upstreamBuckets
	return k
}

// Nodes reports Nodes (every Node, as upstream) labelled by the Node label
// keys labelKeys (upstream's: the NodeClass labels, karpenter.sh/nodepool
// and karpenter.sh/initialized), without the deprecated series: upstream's
// Node status controller does not emit them.
func Nodes(labelKeys []string) Kind {
	k := kind("node", schema.GroupKind{Kind: "Node"},
		func() *corev1.Node { return &corev1.Node{} },
		func() *corev1.NodeList { return &corev1.NodeList{} },
		func(l *corev1.NodeList) []*corev1.Node { return pointers(l.Items) },
		nodeConditions)
	k.labelKeys, k.buckets = labelKeys, upstreamBuckets
	return k
}

// EC2NodeClasses reports EC2NodeClasses, with the deprecated series and
// the default buckets, as upstream's AWS provider registers them.
func EC2NodeClasses() Kind {
	k := kind("ec2nodeclass", schema.GroupKind{Group: awsv1.Group, Kind: "EC2NodeClass"},
		func() *awsv1.EC2NodeClass { return &awsv1.EC2NodeClass{} },
		func() *awsv1.EC2NodeClassList { return &awsv1.EC2NodeClassList{} },
		func(l *awsv1.EC2NodeClassList) []*awsv1.EC2NodeClass { return pointers(l.Items) },
		func(nc *awsv1.EC2NodeClass) []metav1.Condition { return nc.Status.Conditions })
	k.deprecated = true
	return k
}

// CapacityBuffers reports CapacityBuffers (namespaced), with the
// deprecated series and upstream's buckets, as upstream registers them
// with the CapacityBuffer gate on.
func CapacityBuffers() Kind {
	k := kind("capacitybuffer", schema.GroupKind{Group: autoscalingv1beta1.Group, Kind: "CapacityBuffer"},
		func() *autoscalingv1beta1.CapacityBuffer { return &autoscalingv1beta1.CapacityBuffer{} },
		func() *autoscalingv1beta1.CapacityBufferList { return &autoscalingv1beta1.CapacityBufferList{} },
		func(l *autoscalingv1beta1.CapacityBufferList) []*autoscalingv1beta1.CapacityBuffer {
			return pointers(l.Items)
		},
		func(cb *autoscalingv1beta1.CapacityBuffer) []metav1.Condition { return cb.Status.Conditions })
	k.deprecated, k.buckets = true, upstreamBuckets
	return k
}

// nodeConditions reads a Node's conditions as metav1 conditions.
func nodeConditions(node *corev1.Node) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(node.Status.Conditions))
	for _, c := range node.Status.Conditions {
		out = append(out, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status), Reason: c.Reason,
			Message: c.Message, LastTransitionTime: c.LastTransitionTime})
	}
	return out
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// labelNames are the kind's extra metric label names, as operatorpkg
// turns label keys into them ("karpenter.sh/nodepool" ->
// "karpenter_sh_nodepool").
func (k Kind) labelNames() []string {
	out := make([]string, len(k.labelKeys))
	for i, key := range k.labelKeys {
		out[i] = strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(key)
	}
	return out
}

// labelValues are obj's values of the kind's label keys.
func (k Kind) labelValues(obj client.Object) []string {
	out := make([]string, len(k.labelKeys))
	for i, key := range k.labelKeys {
		out[i] = obj.GetLabels()[key]
	}
	return out
}
