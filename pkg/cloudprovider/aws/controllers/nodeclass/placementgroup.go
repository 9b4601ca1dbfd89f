package nodeclass

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// requeuePlacementGroup is how often a placement group is resolved again
// (its cache TTL), so a group deleted and recreated under the same name is
// seen, and its nodes drift, within minutes.
const requeuePlacementGroup = time.Minute

type placementGroupProvider interface {
	Resolve(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (*awsv1.PlacementGroup, error)
}

// placementGroupStep resolves status.placementGroup and
// PlacementGroupReady, with upstream's rules: True without a selector
// ("resolved nothing"), False with PlacementGroupNotFound when no available
// group matches, False with PlacementGroupResolutionFailed when EC2 fails
// (the group resolved before stays in the status; Ready is False anyway,
// so nothing launches from it).
type placementGroupStep struct {
	groups placementGroupProvider
	report reporter
}

func (s *placementGroupStep) reconcile(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (reconcile.Result, error) {
	sel := nodeClass.Spec.PlacementGroupSelector
	if sel == nil {
		nodeClass.Status.PlacementGroup = nil
		s.report.conditions(nodeClass).SetTrue(awsv1.ConditionTypePlacementGroupReady)
		return reconcile.Result{}, nil
	}
	selector := deref(sel.Name)
	if selector == "" {
		selector = deref(sel.ID)
	}
	if s.groups == nil {
		// Launching without the group would ignore the selector.
		s.report.notReady(nodeClass, awsv1.ConditionTypePlacementGroupReady, awsv1.ConditionReasonPlacementGroupResolutionFailed,
			fmt.Sprintf("Failed to resolve placement group %q: placement groups are not resolved by this controller", selector))
		return reconcile.Result{}, nil
	}
	group, err := s.groups.Resolve(ctx, nodeClass)
	if err != nil {
		s.report.notReady(nodeClass, awsv1.ConditionTypePlacementGroupReady, awsv1.ConditionReasonPlacementGroupResolutionFailed,
			fmt.Sprintf("Failed to resolve placement group %q: %s", selector, stableMessage(err)))
		return reconcile.Result{}, fmt.Errorf("resolving placement group %q: %w", selector, err)
	}
	if group == nil {
		nodeClass.Status.PlacementGroup = nil
		s.report.notReady(nodeClass, awsv1.ConditionTypePlacementGroupReady, awsv1.ConditionReasonPlacementGroupNotFound,
			fmt.Sprintf("Placement group %q not found", selector))
		return reconcile.Result{RequeueAfter: requeueNotFound}, nil
	}
	if !equality.Semantic.DeepEqual(nodeClass.Status.PlacementGroup, group) {
		log.FromContext(ctx).V(1).Info("discovered placement group", "EC2NodeClass", nodeClass.Name,
			"id", group.ID, "name", group.Name, "strategy", group.Strategy)
	}
	nodeClass.Status.PlacementGroup = group
	s.report.conditions(nodeClass).SetTrue(awsv1.ConditionTypePlacementGroupReady)
	return reconcile.Result{RequeueAfter: requeuePlacementGroup}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
