package nodeclass

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// instanceProfileTTL is how long a found instance profile is trusted
// without asking IAM again (upstream's lookup cache).
const instanceProfileTTL = 15 * time.Minute

// managedPathPrefix is the IAM path of the instance profiles Karpenter
// creates for a role; such a profile is preferred for spec.role.
const managedPathPrefix = "/karpenter/"

// iamAPI is the slice of the IAM API the controller calls.
type iamAPI interface {
	GetInstanceProfile(ctx context.Context, in *iam.GetInstanceProfileInput, opts ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
	ListInstanceProfilesForRole(ctx context.Context, in *iam.ListInstanceProfilesForRoleInput, opts ...func(*iam.Options)) (*iam.ListInstanceProfilesForRoleOutput, error)
}

// instanceProfileStep resolves status.instanceProfile and
// InstanceProfileReady by looking the profile up in IAM.
type instanceProfileStep struct {
	iam    iamAPI
	found  *utilcache.LRUExpireCache
	report reporter
}

func newInstanceProfileStep(api iamAPI, clk clock.PassiveClock, report reporter) *instanceProfileStep {
	return &instanceProfileStep{iam: api, found: utilcache.NewLRUExpireCacheWithClock(1000, clk), report: report}
}

// errNoProfile is a lookup that found no usable instance profile.
var errNoProfile = errors.New("instance profile not found")

func (s *instanceProfileStep) reconcile(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (reconcile.Result, error) {
	var name string
	var err error
	if nodeClass.Spec.InstanceProfile != nil {
		name, err = s.byName(ctx, *nodeClass.Spec.InstanceProfile)
	} else {
		name, err = s.byRole(ctx, nodeClass.Spec.Role, nodeClass.Status.InstanceProfile)
	}
	if errors.Is(err, errNoProfile) {
		nodeClass.Status.InstanceProfile = ""
		s.report.notReady(nodeClass, awsv1.ConditionTypeInstanceProfileReady, awsv1.ConditionReasonInstanceProfileMissing, err.Error())
		return reconcile.Result{RequeueAfter: requeueNotFound}, nil
	}
	if err != nil {
		have := 0
		if nodeClass.Status.InstanceProfile != "" {
			have = 1
		}
		return s.report.failed(nodeClass, awsv1.ConditionTypeInstanceProfileReady, ReasonInstanceProfileLookupFailed, have, "instance profile", err)
	}
	nodeClass.Status.InstanceProfile = name
	s.report.conditions(nodeClass).SetTrue(awsv1.ConditionTypeInstanceProfileReady)
	return reconcile.Result{}, nil
}

// byName checks that the instance profile spec.instanceProfile names exists.
func (s *instanceProfileStep) byName(ctx context.Context, name string) (string, error) {
	key := "profile/" + name
	if _, ok := s.found.Get(key); ok {
		return name, nil
	}
	_, err := s.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if isNoSuchEntity(err) {
		return "", fmt.Errorf("%w: instance profile %q (spec.instanceProfile) does not exist in IAM", errNoProfile, name)
	}
	if err != nil {
		return "", fmt.Errorf("getting instance profile %q: %w", name, err)
	}
	s.found.Add(key, name, instanceProfileTTL)
	return name, nil
}

// byRole finds an instance profile role is attached to: the current one if
// it still qualifies, else one under Karpenter's path, else the first by
// name. role may carry an IAM path ("path/name"); IAM looks roles up by name.
func (s *instanceProfileStep) byRole(ctx context.Context, role, current string) (string, error) {
	roleName := role[strings.LastIndex(role, "/")+1:]
	key := "role/" + roleName
	if cached, ok := s.found.Get(key); ok {
		return cached.(string), nil
	}
	var profiles []iamtypes.InstanceProfile
	pages := iam.NewListInstanceProfilesForRolePaginator(s.iam, &iam.ListInstanceProfilesForRoleInput{RoleName: aws.String(roleName)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if isNoSuchEntity(err) {
			return "", fmt.Errorf("%w: role %q (spec.role) does not exist in IAM", errNoProfile, role)
		}
		if err != nil {
			return "", fmt.Errorf("listing instance profiles of role %q: %w", roleName, err)
		}
		profiles = append(profiles, page.InstanceProfiles...)
	}
	if len(profiles) == 0 {
		return "", fmt.Errorf("%w: no instance profile has role %q (spec.role) attached; karp does not create instance profiles yet: create one for the role, or set spec.instanceProfile", errNoProfile, roleName)
	}
	slices.SortFunc(profiles, func(a, b iamtypes.InstanceProfile) int {
		return cmp.Or(
			preferred(b, current)-preferred(a, current),
			strings.Compare(aws.ToString(a.InstanceProfileName), aws.ToString(b.InstanceProfileName)),
		)
	})
	name := aws.ToString(profiles[0].InstanceProfileName)
	s.found.Add(key, name, instanceProfileTTL)
	return name, nil
}

// preferred ranks a candidate profile: the one in use, then Karpenter's own.
func preferred(p iamtypes.InstanceProfile, current string) int {
	switch {
	case aws.ToString(p.InstanceProfileName) == current:
		return 2
	case strings.HasPrefix(aws.ToString(p.Path), managedPathPrefix):
		return 1
	}
	return 0
}

func isNoSuchEntity(err error) bool {
	apiErr, ok := errors.AsType[smithy.APIError](err)
	return ok && apiErr.ErrorCode() == "NoSuchEntity"
}
