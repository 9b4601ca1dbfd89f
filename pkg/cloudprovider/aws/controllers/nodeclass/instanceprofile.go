package nodeclass

import (
	"context"
	"errors"
	"fmt"

	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
)

// instanceProfileProvider looks up and manages instance profiles (package
// instanceprofile's Provider).
type instanceProfileProvider interface {
	Get(ctx context.Context, name string) (*iamtypes.InstanceProfile, error)
	Ensure(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (string, error)
}

// instanceProfileStep resolves status.instanceProfile and
// InstanceProfileReady: the profile spec.instanceProfile names must exist;
// for spec.role karp creates (or reuses) the NodeClass's own profile and
// attaches the role.
type instanceProfileStep struct {
	profiles instanceProfileProvider
	report   reporter
}

func (s *instanceProfileStep) reconcile(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (reconcile.Result, error) {
	var name string
	var err error
	reason := ReasonInstanceProfileLookupFailed
	if nodeClass.Spec.InstanceProfile != nil {
		name = *nodeClass.Spec.InstanceProfile
		_, err = s.profiles.Get(ctx, name)
		if instanceprofile.IsNotFound(err) {
			s.missing(nodeClass, fmt.Sprintf("instance profile %q (spec.instanceProfile) does not exist in IAM", name))
			return reconcile.Result{RequeueAfter: requeueNotFound}, nil
		}
	} else {
		reason = ReasonInstanceProfileCreationFailed
		name, err = s.profiles.Ensure(ctx, nodeClass)
		if errors.Is(err, instanceprofile.ErrRoleNotFound) {
			s.missing(nodeClass, fmt.Sprintf("role %q (spec.role) does not exist in IAM: create it or correct spec.role", nodeClass.Spec.Role))
			return reconcile.Result{RequeueAfter: requeueNotFound}, nil
		}
	}
	if err != nil {
		have := 0
		if nodeClass.Status.InstanceProfile != "" {
			have = 1
		}
		if instanceprofile.IsAccessDenied(err) {
			err = fmt.Errorf("access denied: grant the controller's role the IAM actions of docs/aws.md: %w", err)
		}
		return s.report.failed(nodeClass, awsv1.ConditionTypeInstanceProfileReady, reason, have, "instance profile", err)
	}
	nodeClass.Status.InstanceProfile = name
	s.report.conditions(nodeClass).SetTrue(awsv1.ConditionTypeInstanceProfileReady)
	return reconcile.Result{}, nil
}

func (s *instanceProfileStep) missing(nodeClass *awsv1.EC2NodeClass, message string) {
	nodeClass.Status.InstanceProfile = ""
	s.report.notReady(nodeClass, awsv1.ConditionTypeInstanceProfileReady, awsv1.ConditionReasonInstanceProfileMissing, message)
}
