package nodeclass

import (
	"context"
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
}

func (s *validationStep) reconcile(_ context.Context, nodeClass *awsv1.EC2NodeClass) (reconcile.Result, error) {
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
	if message := kubeletUnsupported(nodeClass.AMIFamily(), nodeClass.Spec.Kubelet); message != "" {
		// Only a spec change can fix it, and a spec change reconciles.
		s.report.notReady(nodeClass, awsv1.ConditionTypeValidationSucceeded, awsv1.ConditionReasonUnsupportedKubelet, message)
		return reconcile.Result{}, nil
	}
	conditions.SetTrue(awsv1.ConditionTypeValidationSucceeded)
	return reconcile.Result{RequeueAfter: requeueValidation}, nil
}

// kubeletUnsupported says which kubelet setting family's bootstrap cannot
// apply, as upstream: Bottlerocket has no podsPerCore, and only AL2023 (and
// Custom, whose user data is the user's) takes more than one cluster DNS
// address.
func kubeletUnsupported(family string, kubelet *awsv1.KubeletConfiguration) string {
	if kubelet == nil || family == awsv1.AMIFamilyCustom {
		return ""
	}
	if family == awsv1.AMIFamilyBottlerocket && kubelet.PodsPerCore != nil {
		return fmt.Sprintf("kubelet.podsPerCore is not supported by the %s AMI family", family)
	}
	if family != awsv1.AMIFamilyAL2023 && len(kubelet.ClusterDNS) > 1 {
		return fmt.Sprintf("kubelet.clusterDNS with more than one address is not supported by the %s AMI family", family)
	}
	return ""
}
