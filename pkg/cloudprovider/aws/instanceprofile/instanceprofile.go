package instanceprofile

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

const (
	// profileTTL is how long a looked-up profile is trusted without asking
	// IAM again (upstream's lookup cache).
	profileTTL = 15 * time.Minute
	// missingRoleTTL is how long a role IAM reported missing is not tried
	// again (upstream's role-not-found cache).
	missingRoleTTL = time.Minute
	// PathPrefix starts the IAM path of every profile karp creates.
	PathPrefix = "/karpenter/"
	// TagManagedBy names the cluster that manages a profile.
	TagManagedBy = "karpenter.sh/managed-by"
)

// IAMAPI is the slice of the IAM API the provider calls.
type IAMAPI interface {
	GetInstanceProfile(ctx context.Context, in *iam.GetInstanceProfileInput, opts ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
	CreateInstanceProfile(ctx context.Context, in *iam.CreateInstanceProfileInput, opts ...func(*iam.Options)) (*iam.CreateInstanceProfileOutput, error)
	TagInstanceProfile(ctx context.Context, in *iam.TagInstanceProfileInput, opts ...func(*iam.Options)) (*iam.TagInstanceProfileOutput, error)
	AddRoleToInstanceProfile(ctx context.Context, in *iam.AddRoleToInstanceProfileInput, opts ...func(*iam.Options)) (*iam.AddRoleToInstanceProfileOutput, error)
	RemoveRoleFromInstanceProfile(ctx context.Context, in *iam.RemoveRoleFromInstanceProfileInput, opts ...func(*iam.Options)) (*iam.RemoveRoleFromInstanceProfileOutput, error)
	DeleteInstanceProfile(ctx context.Context, in *iam.DeleteInstanceProfileInput, opts ...func(*iam.Options)) (*iam.DeleteInstanceProfileOutput, error)
	ListInstanceProfiles(ctx context.Context, in *iam.ListInstanceProfilesInput, opts ...func(*iam.Options)) (*iam.ListInstanceProfilesOutput, error)
}

// ErrRoleNotFound is returned (wrapped, naming the role) when IAM has no
// role of the name spec.role gives.
var ErrRoleNotFound = errors.New("role not found")

// Provider creates, reuses and deletes the instance profiles of
// EC2NodeClasses. It is safe for concurrent use.
type Provider struct {
	iam         IAMAPI
	clusterName string
	region      string
	// profiles caches looked-up profiles by name.
	profiles *utilcache.LRUExpireCache
	// missingRoles caches, by role name, the error of a role IAM did not
	// find.
	missingRoles *utilcache.LRUExpireCache
}

// NewProvider builds the provider for the cluster's profiles in region.
func NewProvider(api IAMAPI, clk clock.PassiveClock, clusterName, region string) *Provider {
	return &Provider{
		iam:          api,
		clusterName:  clusterName,
		region:       region,
		profiles:     utilcache.NewLRUExpireCacheWithClock(1000, clk),
		missingRoles: utilcache.NewLRUExpireCacheWithClock(1000, clk),
	}
}

// Name is the name of the profile karp manages for a NodeClass:
// <cluster>_<FNV-64a of region and NodeClass name, in decimal>, the name
// upstream Karpenter gives it.
func Name(clusterName, region, nodeClassName string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(region + nodeClassName))
	return fmt.Sprintf("%s_%d", clusterName, h.Sum64())
}

// Path is the IAM path karp creates a NodeClass's profile under.
func (p *Provider) Path(nodeClass *awsv1.EC2NodeClass) string {
	return fmt.Sprintf("%s%s/%s/%s/", PathPrefix, p.region, p.clusterName, nodeClass.UID)
}

// Tags are the tags of a NodeClass's profile: its spec.tags under the
// cluster's, region's and NodeClass's own.
func (p *Provider) Tags(nodeClass *awsv1.EC2NodeClass) map[string]string {
	tags := maps.Clone(nodeClass.Spec.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[awsv1.ClusterTagKey(p.clusterName)] = "owned"
	tags[awsv1.TagEKSClusterName] = p.clusterName
	tags[awsv1.TagNodeClass] = nodeClass.Name
	tags[corev1.LabelTopologyRegion] = p.region
	tags[TagManagedBy] = p.clusterName
	return tags
}

// Get returns the named profile, from the cache when looked up in the
// last 15 minutes. A missing profile is IAM's NoSuchEntity (IsNotFound).
func (p *Provider) Get(ctx context.Context, name string) (*iamtypes.InstanceProfile, error) {
	if cached, ok := p.profiles.Get(name); ok {
		profile := cached.(iamtypes.InstanceProfile)
		profile.Roles = slices.Clone(profile.Roles)
		profile.Tags = slices.Clone(profile.Tags)
		return &profile, nil
	}
	out, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		return nil, fmt.Errorf("getting instance profile %s: %w", name, err)
	}
	p.profiles.Add(name, *out.InstanceProfile, profileTTL)
	return out.InstanceProfile, nil
}

// Ensure makes the NodeClass's managed profile exist, tagged, with the
// role of spec.role attached, and returns its name. A role IAM does not
// know is ErrRoleNotFound.
func (p *Provider) Ensure(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (string, error) {
	// A role given with its IAM path is attached by name.
	role := nodeClass.Spec.Role[strings.LastIndex(nodeClass.Spec.Role, "/")+1:]
	if cached, ok := p.missingRoles.Get(role); ok {
		return "", cached.(error)
	}
	name := Name(p.clusterName, p.region, nodeClass.Name)
	// 1. The profile: reused, else created under the NodeClass's path.
	profile, err := p.Get(ctx, name)
	if IsNotFound(err) {
		profile, err = p.create(ctx, nodeClass, name)
	}
	if err != nil {
		return "", err
	}
	// 2. Its tags, when a reused profile lacks some.
	if err := p.tag(ctx, nodeClass, profile); err != nil {
		return "", err
	}
	// 3. Its role: one per profile, so a different one is replaced.
	if err := p.attach(ctx, profile, role); err != nil {
		return "", err
	}
	p.profiles.Add(name, *profile, profileTTL)
	return name, nil
}

func (p *Provider) create(ctx context.Context, nodeClass *awsv1.EC2NodeClass, name string) (*iamtypes.InstanceProfile, error) {
	out, err := p.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
		InstanceProfileName: aws.String(name),
		Path:                aws.String(p.Path(nodeClass)),
		Tags:                iamTags(p.Tags(nodeClass)),
	})
	if errorCode(err) == (&iamtypes.EntityAlreadyExistsException{}).ErrorCode() {
		// Made meanwhile (another replica, or a lookup served stale).
		p.profiles.Remove(name)
		return p.Get(ctx, name)
	}
	if err != nil {
		return nil, fmt.Errorf("creating instance profile %s: %w", name, err)
	}
	log.FromContext(ctx).Info("created instance profile", "instanceProfile", name, "path", p.Path(nodeClass))
	return out.InstanceProfile, nil
}

// tag adds the tags the profile lacks or holds with another value.
func (p *Provider) tag(ctx context.Context, nodeClass *awsv1.EC2NodeClass, profile *iamtypes.InstanceProfile) error {
	have := map[string]string{}
	for _, t := range profile.Tags {
		have[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	missing := map[string]string{}
	for k, v := range p.Tags(nodeClass) {
		if value, ok := have[k]; !ok || value != v {
			missing[k] = v
		}
	}
	if len(missing) == 0 {
		return nil
	}
	name := aws.ToString(profile.InstanceProfileName)
	if _, err := p.iam.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String(name), Tags: iamTags(missing)}); err != nil {
		return fmt.Errorf("tagging instance profile %s: %w", name, err)
	}
	for k, v := range missing {
		i := slices.IndexFunc(profile.Tags, func(t iamtypes.Tag) bool { return aws.ToString(t.Key) == k })
		if i >= 0 {
			profile.Tags[i].Value = aws.String(v)
		} else {
			profile.Tags = append(profile.Tags, iamtypes.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
	}
	return nil
}

// attach makes role the profile's one role.
func (p *Provider) attach(ctx context.Context, profile *iamtypes.InstanceProfile, role string) error {
	name := aws.ToString(profile.InstanceProfileName)
	for _, r := range profile.Roles {
		if aws.ToString(r.RoleName) == role {
			return nil
		}
	}
	for _, r := range profile.Roles {
		_, err := p.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: r.RoleName})
		if err != nil && !IsNotFound(err) {
			return fmt.Errorf("removing role %s from instance profile %s: %w", aws.ToString(r.RoleName), name, err)
		}
		log.FromContext(ctx).Info("removed role from instance profile", "instanceProfile", name, "role", aws.ToString(r.RoleName))
	}
	profile.Roles = nil
	p.profiles.Remove(name)
	_, err := p.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(role)})
	if isRoleNotFound(err) {
		err = fmt.Errorf("%w: IAM has no role %q (spec.role): %w", ErrRoleNotFound, role, err)
		p.missingRoles.Add(role, err, missingRoleTTL)
		return err
	}
	if err != nil {
		return fmt.Errorf("adding role %s to instance profile %s: %w", role, name, err)
	}
	profile.Roles = []iamtypes.Role{{RoleName: aws.String(role)}}
	return nil
}

// Delete deletes the profiles karp made for the NodeClass: those under its
// path, and its managed name when karp or Karpenter made it (a path under
// the cluster's /karpenter/<region>/<cluster>/). Each is checked to be
// karp's before it is deleted (see owns), whatever IAM listed. Roles are
// removed first, as IAM requires; profiles already gone are ignored.
func (p *Provider) Delete(ctx context.Context, nodeClass *awsv1.EC2NodeClass) error {
	profiles, err := p.list(ctx, p.Path(nodeClass))
	if err != nil {
		return err
	}
	var errs []error
	for i := range profiles {
		errs = append(errs, p.delete(ctx, aws.ToString(profiles[i].InstanceProfileName), p.Path(nodeClass)))
	}
	name := Name(p.clusterName, p.region, nodeClass.Name)
	if !slices.ContainsFunc(profiles, func(ip iamtypes.InstanceProfile) bool { return aws.ToString(ip.InstanceProfileName) == name }) {
		// The managed name may lie under another path of the cluster (a
		// profile Karpenter made for an earlier NodeClass of the name).
		errs = append(errs, p.delete(ctx, name, p.clusterPath()))
	}
	return errors.Join(errs...)
}

// clusterPath is the IAM path every profile karp makes in this cluster
// and region lies under.
func (p *Provider) clusterPath() string {
	return fmt.Sprintf("%s%s/%s/", PathPrefix, p.region, p.clusterName)
}

// list lists the profiles under prefix, checking each path: IAM's
// PathPrefix filter is not relied upon.
func (p *Provider) list(ctx context.Context, prefix string) ([]iamtypes.InstanceProfile, error) {
	var out []iamtypes.InstanceProfile
	pages := iam.NewListInstanceProfilesPaginator(p.iam, &iam.ListInstanceProfilesInput{PathPrefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing instance profiles under %s: %w", prefix, err)
		}
		for _, profile := range page.InstanceProfiles {
			if strings.HasPrefix(aws.ToString(profile.Path), prefix) {
				out = append(out, profile)
			}
		}
	}
	return out, nil
}

// owns reports whether a profile, as GetInstanceProfile describes it, is
// one karp (or Karpenter) made in this cluster: under prefix (a path in
// /karpenter/<region>/<cluster>/), named <cluster>_<hash>, and tagged
// kubernetes.io/cluster/<cluster>=owned or karpenter.sh/managed-by=<cluster>
// (Karpenter's profiles carry the first, karp's both). A profile failing
// any of these is never changed or deleted; the reason says which.
func (p *Provider) owns(profile *iamtypes.InstanceProfile, prefix string) (bool, string) {
	tags := map[string]string{}
	for _, t := range profile.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	switch {
	case !strings.HasPrefix(aws.ToString(profile.Path), prefix):
		return false, "its path is not under " + prefix
	case !strings.HasPrefix(aws.ToString(profile.InstanceProfileName), p.clusterName+"_"):
		return false, "its name does not start with " + p.clusterName + "_"
	case tags[awsv1.ClusterTagKey(p.clusterName)] != "owned" && tags[TagManagedBy] != p.clusterName:
		return false, "it is not tagged as owned by cluster " + p.clusterName
	}
	return true, ""
}

// ManagedName is the name of the profile karp manages for the named
// NodeClass in this cluster and region.
func (p *Provider) ManagedName(nodeClassName string) string {
	return Name(p.clusterName, p.region, nodeClassName)
}

// List returns every profile karp (or Karpenter) may have created in this
// cluster and region: those under /karpenter/<region>/<cluster>/ (the
// path checked here, whatever IAM's filter did). Remove checks the rest.
func (p *Provider) List(ctx context.Context) ([]iamtypes.InstanceProfile, error) {
	return p.list(ctx, p.clusterPath())
}

// Remove deletes one profile of the cluster, its role first, once
// GetInstanceProfile confirms karp owns it (a profile it does not own is
// left alone and is not an error); a profile already gone is not an error.
func (p *Provider) Remove(ctx context.Context, profile iamtypes.InstanceProfile) error {
	return p.delete(ctx, aws.ToString(profile.InstanceProfileName), p.clusterPath())
}

// delete deletes the named profile if karp owns it under prefix. It reads
// the profile afresh, uncached: ListInstanceProfiles returns no tags, and
// the roles to remove must be the current ones.
func (p *Provider) delete(ctx context.Context, name, prefix string) error {
	p.profiles.Remove(name)
	out, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting instance profile %s: %w", name, err)
	}
	profile := out.InstanceProfile
	if ok, why := p.owns(profile, prefix); !ok {
		log.FromContext(ctx).V(1).Info("not deleting instance profile karp does not own", "instanceProfile", name, "reason", why)
		return nil
	}
	for _, r := range profile.Roles {
		_, err := p.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: r.RoleName})
		if err != nil && !IsNotFound(err) {
			return fmt.Errorf("removing role %s from instance profile %s: %w", aws.ToString(r.RoleName), name, err)
		}
	}
	if _, err := p.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("deleting instance profile %s: %w", name, err)
	}
	log.FromContext(ctx).Info("deleted instance profile", "instanceProfile", name)
	return nil
}

func iamTags(tags map[string]string) []iamtypes.Tag {
	out := make([]iamtypes.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, iamtypes.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

func errorCode(err error) string {
	if apiErr, ok := errors.AsType[smithy.APIError](err); ok {
		return apiErr.ErrorCode()
	}
	return ""
}

// IsNotFound reports IAM's NoSuchEntity.
func IsNotFound(err error) bool {
	return errorCode(err) == (&iamtypes.NoSuchEntityException{}).ErrorCode()
}

// isRoleNotFound tells a missing role from a missing profile: both are
// NoSuchEntity, only the message says which.
func isRoleNotFound(err error) bool {
	apiErr, ok := errors.AsType[smithy.APIError](err)
	return ok && IsNotFound(err) && strings.Contains(strings.ToLower(apiErr.ErrorMessage()), "role")
}

// IsAccessDenied reports an IAM authorization failure.
func IsAccessDenied(err error) bool {
	code := errorCode(err)
	return code == "AccessDenied" || code == "AccessDeniedException" || code == "UnauthorizedOperation"
}
