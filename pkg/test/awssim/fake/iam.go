package fake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"k8s.io/utils/clock"
)

// IAM is a stateful fake of the IAM calls the provider makes about roles
// and instance profiles. Tests add the roles and profiles that exist in the
// account; the provider's calls create, tag, attach and delete them with
// IAM's rules (one role per profile, a profile with a role cannot be
// deleted) and IAM's error codes (NoSuchEntity, EntityAlreadyExists,
// LimitExceeded, DeleteConflict).
type IAM struct {
	Faults

	// IgnorePathPrefix makes ListInstanceProfiles ignore its PathPrefix and
	// list every profile in the account, as an emulator may; default off.
	IgnorePathPrefix bool

	mu       sync.Mutex
	clock    clock.PassiveClock
	nextID   int
	profiles map[string]*iamtypes.InstanceProfile
	roles    map[string]iamtypes.Role
}

// NewIAM returns a fake with no roles and no instance profiles.
func NewIAM() *IAM {
	return &IAM{clock: clock.RealClock{}, profiles: map[string]*iamtypes.InstanceProfile{}, roles: map[string]iamtypes.Role{}}
}

// SetClock sets the clock stamping profiles' CreateDate.
func (f *IAM) SetClock(clk clock.PassiveClock) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock = clk
}

// AddRole creates an IAM role with no instance profile.
func (f *IAM) AddRole(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addRole(name)
}

func (f *IAM) addRole(name string) iamtypes.Role {
	if r, ok := f.roles[name]; ok {
		return r
	}
	f.nextID++
	r := iamtypes.Role{
		RoleName: ptr(name),
		RoleId:   ptr(fmt.Sprintf("AROA%016X", f.nextID)),
		Arn:      ptr(fmt.Sprintf("arn:aws:iam::%s:role/%s", AccountID, name)),
		Path:     ptr("/"),
	}
	f.roles[name] = r
	return r
}

// RemoveRole deletes a role; it reports whether it existed. Profiles keep
// naming it, as IAM's do until the role is removed from them.
func (f *IAM) RemoveRole(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.roles[name]
	delete(f.roles, name)
	return ok
}

// AddInstanceProfile creates (or replaces) an instance profile at path "/"
// with role attached (none when role is empty), creating the role if needed.
func (f *IAM) AddInstanceProfile(name, role string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	profile := f.newProfile(name, "/", nil)
	if role != "" {
		profile.Roles = []iamtypes.Role{f.addRole(role)}
	}
	f.profiles[name] = profile
}

func (f *IAM) newProfile(name, path string, tags []iamtypes.Tag) *iamtypes.InstanceProfile {
	f.nextID++
	return &iamtypes.InstanceProfile{
		InstanceProfileName: ptr(name),
		InstanceProfileId:   ptr(fmt.Sprintf("AIPA%016X", f.nextID)),
		Arn:                 ptr(fmt.Sprintf("arn:aws:iam::%s:instance-profile%s%s", AccountID, path, name)),
		Path:                ptr(path),
		Tags:                slices.Clone(tags),
		CreateDate:          ptr(f.clock.Now()),
	}
}

// InstanceProfile returns a copy of the named profile.
func (f *IAM) InstanceProfile(name string) (iamtypes.InstanceProfile, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.profiles[name]
	if !ok {
		return iamtypes.InstanceProfile{}, false
	}
	return copyProfile(p), true
}

// InstanceProfileNames lists the account's instance profiles, sorted.
func (f *IAM) InstanceProfileNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.profiles))
}

// ProfileTags returns a profile's tags as a map (nil when it does not exist).
func (f *IAM) ProfileTags(name string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.profiles[name]
	if !ok {
		return nil
	}
	out := map[string]string{}
	for _, t := range p.Tags {
		out[deref(t.Key)] = deref(t.Value)
	}
	return out
}

func copyProfile(p *iamtypes.InstanceProfile) iamtypes.InstanceProfile {
	out := *p
	out.Roles = slices.Clone(p.Roles)
	out.Tags = slices.Clone(p.Tags)
	return out
}

// profile is the named instance profile, or NoSuchEntity as IAM answers.
// The caller holds f.mu.
func (f *IAM) profile(name string) (*iamtypes.InstanceProfile, error) {
	profile, ok := f.profiles[name]
	if !ok {
		return nil, &iamtypes.NoSuchEntityException{Message: ptr(fmt.Sprintf("Instance Profile %s cannot be found.", name))}
	}
	return profile, nil
}

// role is the named role, or NoSuchEntity as IAM answers. The caller
// holds f.mu.
func (f *IAM) role(name string) (iamtypes.Role, error) {
	role, ok := f.roles[name]
	if !ok {
		return iamtypes.Role{}, &iamtypes.NoSuchEntityException{Message: ptr(fmt.Sprintf("The role with name %s cannot be found.", name))}
	}
	return role, nil
}

// GetInstanceProfile returns the named profile, or NoSuchEntity.
func (f *IAM) GetInstanceProfile(_ context.Context, in *iam.GetInstanceProfileInput, _ ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error) {
	if err := f.enter("GetInstanceProfile"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	profile, err := f.profile(deref(in.InstanceProfileName))
	if err != nil {
		return nil, err
	}
	out := copyProfile(profile)
	return &iam.GetInstanceProfileOutput{InstanceProfile: &out}, nil
}

// GetRole returns the named role, or NoSuchEntity.
func (f *IAM) GetRole(_ context.Context, in *iam.GetRoleInput, _ ...func(*iam.Options)) (*iam.GetRoleOutput, error) {
	if err := f.enter("GetRole"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	role, err := f.role(deref(in.RoleName))
	if err != nil {
		return nil, err
	}
	return &iam.GetRoleOutput{Role: &role}, nil
}

// CreateInstanceProfile creates a profile with no role at the given path
// ("/" when unset; IAM requires it to start and end with "/"), tagged;
// EntityAlreadyExists when the name is taken.
func (f *IAM) CreateInstanceProfile(_ context.Context, in *iam.CreateInstanceProfileInput, _ ...func(*iam.Options)) (*iam.CreateInstanceProfileOutput, error) {
	if err := f.enter("CreateInstanceProfile"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	name := deref(in.InstanceProfileName)
	if name == "" || len(name) > 128 {
		return nil, APIError("ValidationError", "1 validation error detected: Value at 'instanceProfileName' failed to satisfy constraint: Member must have length between 1 and 128")
	}
	path := "/"
	if in.Path != nil {
		path = *in.Path
	}
	if !strings.HasPrefix(path, "/") || !strings.HasSuffix(path, "/") || len(path) > 512 {
		return nil, APIError("ValidationError", fmt.Sprintf("The specified value for path is invalid. It must begin and end with / and contain only alphanumeric characters and/or / characters: %s", path))
	}
	if _, ok := f.profiles[name]; ok {
		return nil, &iamtypes.EntityAlreadyExistsException{Message: ptr(fmt.Sprintf("Instance Profile %s already exists.", name))}
	}
	profile := f.newProfile(name, path, in.Tags)
	f.profiles[name] = profile
	out := copyProfile(profile)
	return &iam.CreateInstanceProfileOutput{InstanceProfile: &out}, nil
}

// TagInstanceProfile adds or overwrites tags on a profile.
func (f *IAM) TagInstanceProfile(_ context.Context, in *iam.TagInstanceProfileInput, _ ...func(*iam.Options)) (*iam.TagInstanceProfileOutput, error) {
	if err := f.enter("TagInstanceProfile"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	profile, err := f.profile(deref(in.InstanceProfileName))
	if err != nil {
		return nil, err
	}
	for _, t := range in.Tags {
		i := slices.IndexFunc(profile.Tags, func(have iamtypes.Tag) bool { return deref(have.Key) == deref(t.Key) })
		if i >= 0 {
			profile.Tags[i] = t
		} else {
			profile.Tags = append(profile.Tags, t)
		}
	}
	return &iam.TagInstanceProfileOutput{}, nil
}

// AddRoleToInstanceProfile attaches a role. IAM allows one role per
// profile: a profile that has one is LimitExceeded.
func (f *IAM) AddRoleToInstanceProfile(_ context.Context, in *iam.AddRoleToInstanceProfileInput, _ ...func(*iam.Options)) (*iam.AddRoleToInstanceProfileOutput, error) {
	if err := f.enter("AddRoleToInstanceProfile"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	profile, err := f.profile(deref(in.InstanceProfileName))
	if err != nil {
		return nil, err
	}
	role, err := f.role(deref(in.RoleName))
	if err != nil {
		return nil, err
	}
	if len(profile.Roles) > 0 {
		return nil, &iamtypes.LimitExceededException{Message: ptr("Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1")}
	}
	profile.Roles = []iamtypes.Role{role}
	return &iam.AddRoleToInstanceProfileOutput{}, nil
}

// RemoveRoleFromInstanceProfile detaches a role; NoSuchEntity when the
// profile does not exist or does not have the role.
func (f *IAM) RemoveRoleFromInstanceProfile(_ context.Context, in *iam.RemoveRoleFromInstanceProfileInput, _ ...func(*iam.Options)) (*iam.RemoveRoleFromInstanceProfileOutput, error) {
	if err := f.enter("RemoveRoleFromInstanceProfile"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	name, role := deref(in.InstanceProfileName), deref(in.RoleName)
	profile, err := f.profile(name)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(profile.Roles, func(r iamtypes.Role) bool { return deref(r.RoleName) == role })
	if i < 0 {
		return nil, &iamtypes.NoSuchEntityException{Message: ptr(fmt.Sprintf("The role with name %s cannot be found in instance profile %s.", role, name))}
	}
	profile.Roles = slices.Delete(profile.Roles, i, i+1)
	return &iam.RemoveRoleFromInstanceProfileOutput{}, nil
}

// DeleteInstanceProfile deletes a profile with no role; DeleteConflict
// while a role is attached, NoSuchEntity when it does not exist.
func (f *IAM) DeleteInstanceProfile(_ context.Context, in *iam.DeleteInstanceProfileInput, _ ...func(*iam.Options)) (*iam.DeleteInstanceProfileOutput, error) {
	if err := f.enter("DeleteInstanceProfile"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	name := deref(in.InstanceProfileName)
	profile, err := f.profile(name)
	if err != nil {
		return nil, err
	}
	if len(profile.Roles) > 0 {
		return nil, &iamtypes.DeleteConflictException{Message: ptr("Cannot delete entity, must remove roles from instance profile first.")}
	}
	delete(f.profiles, name)
	return &iam.DeleteInstanceProfileOutput{}, nil
}

// ListInstanceProfiles lists the profiles whose path starts with
// PathPrefix ("/" when unset), by name, paginated by Marker and MaxItems.
func (f *IAM) ListInstanceProfiles(_ context.Context, in *iam.ListInstanceProfilesInput, _ ...func(*iam.Options)) (*iam.ListInstanceProfilesOutput, error) {
	if err := f.enter("ListInstanceProfiles"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	prefix := "/"
	if in.PathPrefix != nil && !f.IgnorePathPrefix {
		prefix = *in.PathPrefix
	}
	profiles, marker, err := f.profilePage(func(p *iamtypes.InstanceProfile) bool {
		return strings.HasPrefix(deref(p.Path), prefix)
	}, in.Marker, in.MaxItems)
	if err != nil {
		return nil, err
	}
	return &iam.ListInstanceProfilesOutput{InstanceProfiles: profiles, IsTruncated: marker != nil, Marker: marker}, nil
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
	if _, err := f.role(role); err != nil {
		return nil, err
	}
	profiles, marker, err := f.profilePage(func(p *iamtypes.InstanceProfile) bool {
		return slices.ContainsFunc(p.Roles, func(r iamtypes.Role) bool { return deref(r.RoleName) == role })
	}, in.Marker, in.MaxItems)
	if err != nil {
		return nil, err
	}
	return &iam.ListInstanceProfilesForRoleOutput{InstanceProfiles: profiles, IsTruncated: marker != nil, Marker: marker}, nil
}

// profilePage is one page, by name, of the profiles match selects, with
// the Marker of the next page (nil on the last). The caller holds f.mu.
func (f *IAM) profilePage(match func(*iamtypes.InstanceProfile) bool, marker *string, maxItems *int32) ([]iamtypes.InstanceProfile, *string, error) {
	var names []string
	for name, p := range f.profiles {
		if match(p) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	start, end, err := iamPage(len(names), marker, maxItems)
	if err != nil {
		return nil, nil, err
	}
	var page []iamtypes.InstanceProfile
	for _, name := range names[start:end] {
		page = append(page, copyProfile(f.profiles[name]))
	}
	if end < len(names) {
		return page, ptr(strconv.Itoa(end)), nil
	}
	return page, nil, nil
}

// iamPage is the [start, end) window of n sorted items a Marker and
// MaxItems (1..1000, default 100) select, with IAM's validation errors.
func iamPage(n int, marker *string, maxItems *int32) (int, int, error) {
	limit := 100
	if maxItems != nil {
		if *maxItems < 1 || *maxItems > 1000 {
			return 0, 0, APIError("ValidationError", "1 validation error detected: Value at 'maxItems' failed to satisfy constraint: Member must have value between 1 and 1000")
		}
		limit = int(*maxItems)
	}
	start := 0
	if marker != nil {
		m, err := strconv.Atoi(*marker)
		if err != nil || m < 0 || m > n {
			return 0, 0, APIError("ValidationError", "Invalid Marker")
		}
		start = m
	}
	return start, min(start+limit, n), nil
}
