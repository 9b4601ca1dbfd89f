package tagging

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/conflict"
)

// retryBudget is when a NodeClaim over the CreateTags budget is looked at
// again.
const retryBudget = time.Second

// instances finds a live instance by ID (package instance's Provider).
type instances interface {
	Get(ctx context.Context, id string) (*instance.Instance, error)
}

// tagCreator is the EC2 call the tags are written with.
type tagCreator interface {
	CreateTags(ctx context.Context, in *ec2.CreateTagsInput, opts ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
}

// Controller tags registered NodeClaims' instances.
type Controller struct {
	kubeClient  client.Client
	instances   instances
	ec2         tagCreator
	clusterName string
	// budget allows one CreateTags a second.
	budget flowcontrol.PassiveRateLimiter
}

var _ reconcile.ObjectReconciler[*karpv1.NodeClaim] = (*Controller)(nil)

// NewController builds the tagging controller.
func NewController(kubeClient client.Client, instances instances, api tagCreator, clusterName string, clk clock.PassiveClock) *Controller {
	return &Controller{
		kubeClient:  kubeClient,
		instances:   instances,
		ec2:         api,
		clusterName: clusterName,
		budget:      flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(1, 1, clk),
	}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodeclaim.tagging" }

// Register watches the NodeClaims that may need tags; one worker, as
// upstream, since the calls share one budget.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&karpv1.NodeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return needsTags(o.(*karpv1.NodeClaim))
		}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

// needsTags: an EC2NodeClass's NodeClaim whose Node registered, not being
// deleted and not tagged yet.
func needsTags(nodeClaim *karpv1.NodeClaim) bool {
	ref := nodeClaim.Spec.NodeClassRef
	return ref != nil && ref.Group == awsv1.Group && ref.Kind == awsv1.Kind &&
		nodeClaim.Status.NodeName != "" && nodeClaim.Status.ProviderID != "" &&
		nodeClaim.DeletionTimestamp.IsZero() && nodeClaim.Annotations[awsv1.AnnotationInstanceTagged] != "true"
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch

// Reconcile tags the NodeClaim's instance and marks the NodeClaim done.
func (c *Controller) Reconcile(ctx context.Context, nodeClaim *karpv1.NodeClaim) (reconcile.Result, error) {
	if !needsTags(nodeClaim) {
		return reconcile.Result{}, nil
	}
	id, err := instance.ParseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return reconcile.Result{}, nil
	}
	// 1. The tags the instance lacks.
	inst, err := c.instances.Get(ctx, id)
	if cloudprovider.IsNodeClaimNotFoundError(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("getting instance %s: %w", id, err)
	}
	missing := map[string]string{}
	for k, v := range map[string]string{
		awsv1.TagName:           nodeClaim.Status.NodeName,
		awsv1.TagNodeClaim:      nodeClaim.Name,
		awsv1.TagEKSClusterName: c.clusterName,
	} {
		if _, ok := inst.Tags[k]; !ok {
			missing[k] = v
		}
	}
	// 2. Write them, within the budget.
	if len(missing) > 0 {
		if !c.budget.TryAccept() {
			return reconcile.Result{RequeueAfter: retryBudget}, nil
		}
		if _, err := c.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: ec2Tags(missing)}); err != nil {
			if instance.IsNotFound(err) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, fmt.Errorf("tagging instance %s: %w", id, err)
		}
		log.FromContext(ctx).V(1).Info("tagged instance", "NodeClaim", klog.KObj(nodeClaim), "instance", id, "tags", slices.Sorted(maps.Keys(missing)))
	}
	// 3. Mark the NodeClaim done.
	stored := nodeClaim.DeepCopy()
	if nodeClaim.Annotations == nil {
		nodeClaim.Annotations = map[string]string{}
	}
	nodeClaim.Annotations[awsv1.AnnotationInstanceTagged] = "true"
	nodeClaim.Annotations[awsv1.AnnotationClusterNameTaggedCompatibility] = "true"
	if err := c.kubeClient.Patch(ctx, nodeClaim, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("annotating nodeclaim as tagged: %w", err))
	}
	return reconcile.Result{}, nil
}

func ec2Tags(tags map[string]string) []ec2types.Tag {
	out := make([]ec2types.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}
