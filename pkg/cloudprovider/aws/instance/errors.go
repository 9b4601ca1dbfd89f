package instance

import (
	"errors"
	"strings"

	"github.com/aws/smithy-go"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Error codes the provider tells apart.
const (
	codeInstanceIDNotFound         = "InvalidInstanceID.NotFound"
	codeLaunchTemplateNameNotFound = "InvalidLaunchTemplateName.NotFoundException"
	codeLaunchTemplateIDNotFound   = "InvalidLaunchTemplateId.NotFound"
)

// unfulfillableCodes are the CreateFleet error codes that mean the pool
// has no capacity for this request: the offering is marked unavailable and
// the launch falls back to another.
var unfulfillableCodes = sets.New(
	"InsufficientInstanceCapacity",
	"MaxSpotInstanceCountExceeded",
	"VcpuLimitExceeded",
	"UnfulfillableCapacity",
	"Unsupported",
	"InsufficientFreeAddressesInSubnet",
	"MaxFleetCountExceeded",
	"ReservationCapacityExceeded",
)

// serviceLinkedRoleCode is returned for spot launches in an account
// without the EC2 Spot service-linked role.
const serviceLinkedRoleCode = "AuthFailure.ServiceLinkedRoleCreationNotPermitted"

// IsUnfulfillableCapacity reports whether a fleet error code means the
// pool cannot launch now.
func IsUnfulfillableCapacity(code string) bool { return unfulfillableCodes.Has(code) }

// errorCode returns the AWS error code in err's chain, or "".
func errorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// IsNotFound reports whether err says the instance or launch template
// does not exist.
func IsNotFound(err error) bool {
	switch errorCode(err) {
	case codeInstanceIDNotFound, codeLaunchTemplateNameNotFound, codeLaunchTemplateIDNotFound:
		return true
	}
	return false
}

// reasons classifies launch error text into the Launched condition reason
// upstream Karpenter uses; the first match wins.
var reasons = []struct {
	contains []string // all must appear
	reason   string
}{
	{[]string{serviceLinkedRoleCode}, "SpotSLRCreationFailed"},
	{[]string{"Not authorized for images"}, "AMIAuthorizationFailure"},
	{[]string{"UnauthorizedOperation"}, "Unauthorized"},
	{[]string{"AccessDenied"}, "Unauthorized"},
	{[]string{"AuthFailure"}, "Unauthorized"},
	{[]string{"InvalidParameter", "belong to different networks"}, "SecurityGroupSubnetVPCMismatch"},
	{[]string{"iamInstanceProfile.name is invalid"}, "InstanceProfileNameInvalid"},
	{[]string{codeLaunchTemplateIDNotFound}, "LaunchTemplateNotFound"},
	{[]string{"User data is limited to"}, "UserDataSizeLimitExceeded"},
	{[]string{"InvalidAMIID.Malformed"}, "InvalidAMIID"},
	{[]string{"InvalidAMIID.NotFound"}, "AMINotFound"},
	{[]string{"RequestLimitExceeded"}, "RequestLimitExceeded"},
	{[]string{"InternalError"}, "InternalError"},
	{[]string{"not eligible for Free Tier"}, "FreeTierIneligible"},
	{[]string{"MaxFleetCountExceeded"}, "FleetQuotaExceeded"},
	{[]string{"PendingVerification"}, "AccountPendingVerification"},
	{[]string{"MaxSpotInstanceCountExceeded"}, "SpotQuotaExceeded"},
	{[]string{"VcpuLimitExceeded"}, "VCPULimitExceeded"},
	{[]string{"InsufficientFreeAddressesInSubnet"}, "InsufficientFreeAddressesInSubnet"},
}

// ReasonLaunchFailed is the reason of launch errors no rule classifies.
const ReasonLaunchFailed = "LaunchFailed"

// ReasonFor returns the Launched condition reason for an AWS error text.
func ReasonFor(message string) string {
	for _, r := range reasons {
		all := true
		for _, s := range r.contains {
			if !strings.Contains(message, s) {
				all = false
				break
			}
		}
		if all {
			return r.reason
		}
	}
	return ReasonLaunchFailed
}
