package fake

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
)

// IAM is a stateful fake of the IAM calls the provider makes about instance
// profiles. Tests add the profiles that exist in the account.
type IAM struct {
	Faults

	mu       sync.Mutex
	profiles map[string]iamtypes.InstanceProfile
}

// NewIAM returns a fake with no instance profiles.
func NewIAM() *IAM {
	return &IAM{profiles: map[string]iamtypes.InstanceProfile{}}
}

// AddInstanceProfile creates (or replaces) an instance profile at path "/"
// with role attached (none when role is empty).
func (f *IAM) AddInstanceProfile(name, role string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	profile := iamtypes.InstanceProfile{
		InstanceProfileName: ptr(name),
		InstanceProfileId:   ptr("AIPA" + fmt.Sprintf("%016X", len(f.profiles)+1)),
		Arn:                 ptr(fmt.Sprintf("arn:aws:iam::%s:instance-profile/%s", AccountID, name)),
		Path:                ptr("/"),
	}
	if role != "" {
		profile.Roles = []iamtypes.Role{{
			RoleName: ptr(role),
			Arn:      ptr(fmt.Sprintf("arn:aws:iam::%s:role/%s", AccountID, role)),
			Path:     ptr("/"),
		}}
	}
	f.profiles[name] = profile
}

// DeleteInstanceProfile removes a profile; it reports whether it existed.
func (f *IAM) DeleteInstanceProfile(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.profiles[name]
	delete(f.profiles, name)
	return ok
}

// GetInstanceProfile returns the named profile, or NoSuchEntity.
func (f *IAM) GetInstanceProfile(_ context.Context, in *iam.GetInstanceProfileInput, _ ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error) {
	if err := f.enter("GetInstanceProfile"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	profile, ok := f.profiles[deref(in.InstanceProfileName)]
	if !ok {
		return nil, &iamtypes.NoSuchEntityException{Message: ptr(fmt.Sprintf("Instance Profile %s cannot be found.", deref(in.InstanceProfileName)))}
	}
	return &iam.GetInstanceProfileOutput{InstanceProfile: &profile}, nil
}
