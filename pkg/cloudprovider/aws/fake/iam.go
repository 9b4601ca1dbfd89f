package fake

import (
	"context"
	"fmt"
	"slices"
	"strconv"
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
	roles    map[string]bool
}

// NewIAM returns a fake with no instance profiles.
func NewIAM() *IAM {
	return &IAM{profiles: map[string]iamtypes.InstanceProfile{}, roles: map[string]bool{}}
}

// AddRole creates an IAM role with no instance profile.
func (f *IAM) AddRole(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.roles[name] = true
}

// AddInstanceProfile creates (or replaces) an instance profile at path "/"
// with role attached (none when role is empty), creating the role if needed.
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
		f.roles[role] = true
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

// ListInstanceProfilesForRole lists the profiles role is attached to, by
// name, paginated by Marker and MaxItems (1..1000, default 100); an unknown
// role is NoSuchEntity, as in IAM.
func (f *IAM) ListInstanceProfilesForRole(_ context.Context, in *iam.ListInstanceProfilesForRoleInput, _ ...func(*iam.Options)) (*iam.ListInstanceProfilesForRoleOutput, error) {
	if err := f.enter("ListInstanceProfilesForRole"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	role := deref(in.RoleName)
	if !f.roles[role] {
		return nil, &iamtypes.NoSuchEntityException{Message: ptr(fmt.Sprintf("The role with name %s cannot be found.", role))}
	}
	var names []string
	for name, p := range f.profiles {
		if slices.ContainsFunc(p.Roles, func(r iamtypes.Role) bool { return deref(r.RoleName) == role }) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	maxItems := 100
	if in.MaxItems != nil {
		if *in.MaxItems < 1 || *in.MaxItems > 1000 {
			return nil, APIError("ValidationError", "1 validation error detected: Value at 'maxItems' failed to satisfy constraint: Member must have value between 1 and 1000")
		}
		maxItems = int(*in.MaxItems)
	}
	start := 0
	if in.Marker != nil {
		n, err := strconv.Atoi(*in.Marker)
		if err != nil || n < 0 || n > len(names) {
			return nil, APIError("ValidationError", "Invalid Marker")
		}
		start = n
	}
	end := min(start+maxItems, len(names))
	out := &iam.ListInstanceProfilesForRoleOutput{}
	for _, name := range names[start:end] {
		out.InstanceProfiles = append(out.InstanceProfiles, f.profiles[name])
	}
	if end < len(names) {
		out.IsTruncated = true
		out.Marker = ptr(strconv.Itoa(end))
	}
	return out, nil
}
