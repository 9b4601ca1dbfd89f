package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/capacityreservation"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/securitygroup"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/subnet"
)

// Requeue intervals, as upstream: a NodeClass whose selectors match nothing
// is looked at again every minute; subnets every minute (their free IPs
// order the status); AMIs and security groups every five minutes.
const (
	requeueNotFound       = time.Minute
	requeueSubnets        = time.Minute
	requeueAMIs           = 5 * time.Minute
	requeueSecurityGroups = 5 * time.Minute
	// Reservations are looked at every minute, and when one ends or turns
	// expiring if that is sooner.
	requeueCapacityReservations = time.Minute
)

type amiProvider interface {
	Resolve(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (ami.Resolution, error)
}

type subnetProvider interface {
	Resolve(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (subnet.Resolution, error)
}

type securityGroupProvider interface {
	Resolve(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (securitygroup.Resolution, error)
}

type capacityReservationProvider interface {
	List(ctx context.Context, nodeClass *awsv1.EC2NodeClass) ([]ec2types.CapacityReservation, error)
}

type versionSource interface {
	Get(ctx context.Context) (string, error)
}

// amiStep resolves status.amis and AMIsReady.
type amiStep struct {
	amis    amiProvider
	version versionSource
	report  reporter
}

func (s *amiStep) reconcile(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (reconcile.Result, error) {
	resolved, err := s.amis.Resolve(ctx, nodeClass)
	amis := resolved.AMIs
	if unsupported, ok := errors.AsType[*ami.UnsupportedAliasError](err); ok {
		// The cluster's version rules the alias out; it may change, so look
		// again later rather than giving up.
		nodeClass.Status.AMIs = nil
		s.report.notReady(nodeClass, awsv1.ConditionTypeAMIsReady, awsv1.ConditionReasonUnsupportedAlias, unsupported.Error())
		return reconcile.Result{RequeueAfter: requeueAMIs}, nil
	}
	if err != nil {
		return s.report.failed(nodeClass, awsv1.ConditionTypeAMIsReady, ReasonAMIResolutionFailed, len(nodeClass.Status.AMIs), "AMIs", fmt.Errorf("resolving amis: %w", err))
	}
	if len(amis) == 0 {
		nodeClass.Status.AMIs = nil
		message := fmt.Sprintf("AMISelector did not match any AMIs (amiSelectorTerms: %s", terms(nodeClass.Spec.AMISelectorTerms))
		if nodeClass.Alias() != nil {
			if v, err := s.version.Get(ctx); err == nil {
				message += ", Kubernetes " + v
			}
		}
		s.report.notReady(nodeClass, awsv1.ConditionTypeAMIsReady, awsv1.ConditionReasonAMINotFound, message+")")
		return reconcile.Result{RequeueAfter: requeueNotFound}, nil
	}
	nodeClass.Status.AMIs = ami.Status(amis)
	s.report.ready(nodeClass, awsv1.ConditionTypeAMIsReady, ReasonAMITermsUnmatched,
		unmatchedMessage("amiSelectorTerms", "AMI", nodeClass.Spec.AMISelectorTerms, resolved.Unmatched))
	return reconcile.Result{RequeueAfter: requeueAMIs}, nil
}

// subnetStep resolves status.subnets and SubnetsReady.
type subnetStep struct {
	subnets subnetProvider
	report  reporter
}

func (s *subnetStep) reconcile(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (reconcile.Result, error) {
	resolved, err := s.subnets.Resolve(ctx, nodeClass)
	subnets := resolved.Selected
	if err != nil {
		return s.report.failed(nodeClass, awsv1.ConditionTypeSubnetsReady, ReasonSubnetResolutionFailed, len(nodeClass.Status.Subnets), "subnets", fmt.Errorf("resolving subnets: %w", err))
	}
	if len(subnets) == 0 {
		nodeClass.Status.Subnets = nil
		s.report.notReady(nodeClass, awsv1.ConditionTypeSubnetsReady, awsv1.ConditionReasonSubnetsNotFound,
			fmt.Sprintf("SubnetSelector did not match any Subnets (subnetSelectorTerms: %s)", terms(nodeClass.Spec.SubnetSelectorTerms)))
		return reconcile.Result{RequeueAfter: requeueNotFound}, nil
	}
	nodeClass.Status.Subnets = subnet.Status(subnets)
	s.report.ready(nodeClass, awsv1.ConditionTypeSubnetsReady, ReasonSubnetTermsUnmatched,
		unmatchedMessage("subnetSelectorTerms", "subnet", nodeClass.Spec.SubnetSelectorTerms, resolved.Unmatched))
	return reconcile.Result{RequeueAfter: requeueSubnets}, nil
}

// securityGroupStep resolves status.securityGroups and SecurityGroupsReady.
type securityGroupStep struct {
	securityGroups securityGroupProvider
	report         reporter
}

func (s *securityGroupStep) reconcile(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (reconcile.Result, error) {
	resolved, err := s.securityGroups.Resolve(ctx, nodeClass)
	groups := resolved.Selected
	if err != nil {
		return s.report.failed(nodeClass, awsv1.ConditionTypeSecurityGroupsReady, ReasonSecurityGroupResolutionFailed, len(nodeClass.Status.SecurityGroups), "security groups", fmt.Errorf("resolving security groups: %w", err))
	}
	if len(groups) == 0 {
		nodeClass.Status.SecurityGroups = nil
		s.report.notReady(nodeClass, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionReasonSecurityGroupsNotFound,
			fmt.Sprintf("SecurityGroupSelector did not match any SecurityGroups (securityGroupSelectorTerms: %s)", terms(nodeClass.Spec.SecurityGroupSelectorTerms)))
		return reconcile.Result{RequeueAfter: requeueNotFound}, nil
	}
	nodeClass.Status.SecurityGroups = securitygroup.Status(groups)
	s.report.ready(nodeClass, awsv1.ConditionTypeSecurityGroupsReady, ReasonSecurityGroupTermsUnmatched,
		unmatchedMessage("securityGroupSelectorTerms", "security group", nodeClass.Spec.SecurityGroupSelectorTerms, resolved.Unmatched))
	return reconcile.Result{RequeueAfter: requeueSecurityGroups}, nil
}

// capacityReservationStep resolves status.capacityReservations and
// CapacityReservationsReady: True after every successful listing, even one
// matching nothing (upstream's rule). With no provider (the
// ReservedCapacity feature gate is off) none are used.
type capacityReservationStep struct {
	reservations capacityReservationProvider
	report       reporter
}

func (s *capacityReservationStep) reconcile(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (reconcile.Result, error) {
	conditions := s.report.conditions(nodeClass)
	if s.reservations == nil {
		nodeClass.Status.CapacityReservations = nil
		message := ""
		if len(nodeClass.Spec.CapacityReservationSelectorTerms) > 0 {
			message = "the ReservedCapacity feature gate is off: capacity reservations are not used"
		}
		conditions.SetTrueWithReason(awsv1.ConditionTypeCapacityReservationsReady, awsv1.ConditionTypeCapacityReservationsReady, message)
		return reconcile.Result{}, nil
	}
	reservations, err := s.reservations.List(ctx, nodeClass)
	if err != nil {
		return s.report.failed(nodeClass, awsv1.ConditionTypeCapacityReservationsReady, ReasonCapacityReservationResolutionFailed,
			len(nodeClass.Status.CapacityReservations), "capacity reservations", fmt.Errorf("resolving capacity reservations: %w", err))
	}
	now := s.report.clock.Now()
	nodeClass.Status.CapacityReservations = capacityreservation.Status(reservations, now)
	conditions.SetTrue(awsv1.ConditionTypeCapacityReservationsReady)
	return reconcile.Result{RequeueAfter: capacityreservation.RequeueAfter(reservations, now, requeueCapacityReservations)}, nil
}

// unmatchedMessage names the terms at indices unmatched, or is empty.
func unmatchedMessage[T any](field, what string, all []T, unmatched []int) string {
	if len(unmatched) == 0 {
		return ""
	}
	picked := make([]T, 0, len(unmatched))
	for _, i := range unmatched {
		picked = append(picked, all[i])
	}
	return fmt.Sprintf("%s %s matched no %s; the other terms did", field, terms(picked), what)
}
