package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// requeueValidation is how often a valid NodeClass is validated again.
const requeueValidation = 10 * time.Minute

// dependencies are the conditions validation waits for, in the order
// their state is reported.
var dependencies = []string{
	awsv1.ConditionTypeAMIsReady,
	awsv1.ConditionTypeSubnetsReady,
	awsv1.ConditionTypeSecurityGroupsReady,
	awsv1.ConditionTypeInstanceProfileReady,
	awsv1.ConditionTypeCapacityReservationsReady,
}

// validationStep sets ValidationSucceeded: DependenciesNotReady until every
// other condition is True, then the checks the API server cannot make.
type validationStep struct {
	report reporter
	// expressions compiles spec.kubelet's CEL expressions; nil is the
	// NodeClassCEL gate off.
	expressions expressionCompiler
	// dryRun checks the launch calls are authorized; nil is
	// --disable-dry-run.
	dryRun *DryRun
}

// expressionCompiler checks a kubelet CEL expression compiles.
type expressionCompiler interface {
	Compile(expression string) error
}

func (s *validationStep) reconcile(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (reconcile.Result, error) {
	conditions := s.report.conditions(nodeClass)
	for _, dep := range dependencies {
		if conditions.IsFalse(dep) {
			conditions.SetFalse(awsv1.ConditionTypeValidationSucceeded, awsv1.ConditionReasonDependenciesNotReady, dep+" is False")
			return reconcile.Result{}, nil
		}
	}
	for _, dep := range dependencies {
		if !conditions.IsTrue(dep) {
			conditions.SetUnknownWithReason(awsv1.ConditionTypeValidationSucceeded, awsv1.ConditionReasonDependenciesNotReady, dep+" is not known yet")
			return reconcile.Result{}, nil
		}
	}
	if reason, message := s.kubeletInvalid(nodeClass); reason != "" {
		// Only a spec change can fix it, and a spec change reconciles.
		s.report.notReady(nodeClass, awsv1.ConditionTypeValidationSucceeded, reason, message)
		return reconcile.Result{}, nil
	}
	if s.dryRun != nil {
		reason, message, err := s.dryRun.check(ctx, nodeClass)
		if err != nil {
			// Transient (throttled, an EC2 fault): the condition keeps
			// what it said and the reconcile is retried with backoff.
			return reconcile.Result{}, err
		}
		if reason != "" {
			// As upstream: logged by the dry run, no event.
			conditions.SetFalse(awsv1.ConditionTypeValidationSucceeded, reason, message)
			return reconcile.Result{RequeueAfter: requeueValidation}, nil
		}
	}
	conditions.SetTrue(awsv1.ConditionTypeValidationSucceeded)
	return reconcile.Result{RequeueAfter: requeueValidation}, nil
}

// kubeletInvalid checks spec.kubelet as upstream's validation controller
// does (the API server no longer can: it is an open map), then that its
// CEL expressions compile.
func (s *validationStep) kubeletInvalid(nodeClass *awsv1.EC2NodeClass) (string, string) {
	if reason, errs := nodeClass.ValidateKubelet(s.expressions != nil); reason != "" {
		return reason, errors.Join(errs...).Error()
	}
	if k := nodeClass.Spec.Kubelet; k.HasExpressions() {
		if err := s.expressions.Compile(*k.MaxPodsExpression); err != nil {
			return awsv1.ConditionReasonKubeletExpressionInvalid, fmt.Sprintf("spec.kubelet.maxPods: %v", err)
		}
	}
	return "", ""
}
