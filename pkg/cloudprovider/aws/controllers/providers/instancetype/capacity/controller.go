package capacity

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/index"
)

// instanceTypes lists a class's instance types and learns their memory
// (package instancetype's Provider).
type instanceTypes interface {
	List(ctx context.Context, nodeClass *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error)
	RecordMemoryCapacity(ctx context.Context, nodeClass *awsv1.EC2NodeClass, instanceType string, memory resource.Quantity) bool
}

// Controller hands registered Nodes' memory capacity to the instance type
// provider.
type Controller struct {
	kubeClient    client.Client
	instanceTypes instanceTypes
}

var _ reconcile.ObjectReconciler[*corev1.Node] = (*Controller)(nil)

// NewController builds the controller.
func NewController(kubeClient client.Client, instanceTypes instanceTypes) *Controller {
	return &Controller{kubeClient: kubeClient, instanceTypes: instanceTypes}
}

// Name is the controller's name (upstream's).
func (c *Controller) Name() string { return "providers.instancetype.capacity" }

// Register watches Nodes as they register, and every registered Node the
// cache starts with (so a restarted controller learns again); one worker,
// as upstream.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&corev1.Node{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(e event.CreateEvent) bool { return registered(e.Object) },
			UpdateFunc:  func(e event.UpdateEvent) bool { return !registered(e.ObjectOld) && registered(e.ObjectNew) },
			DeleteFunc:  func(event.DeleteEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

func registered(o client.Object) bool {
	return o.GetLabels()[karpv1.NodeRegisteredLabelKey] == "true"
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch

// Reconcile hands the Node's memory capacity to the instance type
// provider when the Node booted the AMI its type launches with now.
func (c *Controller) Reconcile(ctx context.Context, node *corev1.Node) (reconcile.Result, error) {
	memory, ok := node.Status.Capacity[corev1.ResourceMemory]
	if !registered(node) || !node.DeletionTimestamp.IsZero() || !ok {
		return reconcile.Result{}, nil
	}
	// 1. The Node's NodeClaim and EC2NodeClass.
	nodeClaim, err := index.NodeClaimForProviderID(ctx, c.kubeClient, node.Spec.ProviderID)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("getting the nodeclaim of node %s: %w", node.Name, err)
	}
	if nodeClaim == nil || !isEC2NodeClass(nodeClaim.Spec.NodeClassRef) || nodeClaim.Status.ImageID == "" {
		return reconcile.Result{}, nil
	}
	nodeClass := &awsv1.EC2NodeClass{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: nodeClaim.Spec.NodeClassRef.Name}, nodeClass); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("getting ec2nodeclass %s: %w", nodeClaim.Spec.NodeClassRef.Name, err))
	}
	// 2. Only a Node of the AMI a launch would pick now tells what later
	// launches get (upstream's check).
	name := node.Labels[corev1.LabelInstanceTypeStable]
	types, err := c.instanceTypes.List(ctx, nodeClass)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the instance types of ec2nodeclass %s: %w", nodeClass.Name, err)
	}
	var instanceType *cloudprovider.InstanceType
	for _, it := range types {
		if it.Name == name {
			instanceType = it
		}
	}
	if instanceType == nil {
		return reconcile.Result{}, nil
	}
	if ami, ok := launchtemplate.AMIFor(nodeClass.Status.AMIs, instanceType); !ok || ami.ID != nodeClaim.Status.ImageID {
		return reconcile.Result{}, nil
	}
	// 3. Learn it (the provider logs a change).
	c.instanceTypes.RecordMemoryCapacity(ctx, nodeClass, name, memory)
	return reconcile.Result{}, nil
}

// isEC2NodeClass reports whether ref names an EC2NodeClass.
func isEC2NodeClass(ref *karpv1.NodeClassReference) bool {
	return ref != nil && ref.Group == awsv1.Group && ref.Kind == awsv1.Kind && ref.Name != ""
}
