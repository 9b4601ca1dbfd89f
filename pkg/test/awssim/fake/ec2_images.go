package fake

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"
)

// imageTimeFormat is how EC2 writes CreationDate and DeprecationTime.
const imageTimeFormat = "2006-01-02T15:04:05.000Z"

// imageState holds the fake's AMIs in the order they were added, and the
// clock that decides which of them are deprecated.
type imageState struct {
	images []ec2types.Image
	clock  clock.PassiveClock
}

// NewImage builds an available HVM image owned by AccountID. arch is the EC2
// architecture ("x86_64", "arm64"); created is its creation time.
func NewImage(id, name string, arch ec2types.ArchitectureValues, created time.Time, tags map[string]string) ec2types.Image {
	return ec2types.Image{
		ImageId:            ptr(id),
		Name:               ptr(name),
		Architecture:       arch,
		CreationDate:       ptr(created.UTC().Format(imageTimeFormat)),
		State:              ec2types.ImageStateAvailable,
		OwnerId:            ptr(AccountID),
		ImageType:          ec2types.ImageTypeValuesMachine,
		VirtualizationType: ec2types.VirtualizationTypeHvm,
		RootDeviceName:     ptr("/dev/xvda"),
		RootDeviceType:     ec2types.DeviceTypeEbs,
		Tags:               Tags(tags),
	}
}

// SetImageClock sets the clock DescribeImages reads to tell deprecated
// images (DeprecationTime at or before now); the real clock by default.
func (e *EC2) SetImageClock(clk clock.PassiveClock) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.images.clock = clk
}

// AddImages registers images, replacing any with the same ID.
func (e *EC2) AddImages(images ...ec2types.Image) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, img := range images {
		e.images.images = slices.DeleteFunc(e.images.images, func(have ec2types.Image) bool { return deref(have.ImageId) == deref(img.ImageId) })
		e.images.images = append(e.images.images, img)
	}
}

// DeprecateImage sets an image's deprecation time; it reports whether the
// image exists.
func (e *EC2) DeprecateImage(id string, at time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range e.images.images {
		if deref(e.images.images[i].ImageId) == id {
			e.images.images[i].DeprecationTime = ptr(at.UTC().Format(imageTimeFormat))
			return true
		}
	}
	return false
}

// DeregisterImage removes an image; it reports whether it existed.
func (e *EC2) DeregisterImage(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	before := len(e.images.images)
	e.images.images = slices.DeleteFunc(e.images.images, func(img ec2types.Image) bool { return deref(img.ImageId) == id })
	return len(e.images.images) < before
}

// DescribeImages answers ImageIds (an unknown ID is InvalidAMIID.NotFound),
// Owners (account IDs, "self", or an owner alias such as "amazon"),
// IncludeDeprecated (deprecated images of other accounts are left out
// unless it is true, as in EC2), and the filters image-id, name, state,
// architecture, owner-id, owner-alias, image-type, virtualization-type,
// tag:<key> and tag-key, paginated with MaxResults 1..1000.
func (e *EC2) DescribeImages(_ context.Context, in *ec2.DescribeImagesInput, _ ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error) {
	if err := e.enter("DescribeImages"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range in.ImageIds {
		if !slices.ContainsFunc(e.images.images, func(img ec2types.Image) bool { return deref(img.ImageId) == id }) {
			return nil, APIError("InvalidAMIID.NotFound", fmt.Sprintf("The image id '[%s]' does not exist", id))
		}
	}
	var matched []ec2types.Image
	for _, img := range e.images.images {
		if !e.imageSelected(in, img) {
			continue
		}
		ok, err := matchFilters(in.Filters, imageFields(img))
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, img)
		}
	}
	out, next, err := page(matched, in.MaxResults, in.NextToken, 1, 1000)
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeImagesOutput{Images: slices.Clone(out), NextToken: next}, nil
}

// imageSelected applies DescribeImages' parameters other than filters.
func (e *EC2) imageSelected(in *ec2.DescribeImagesInput, img ec2types.Image) bool {
	if len(in.ImageIds) > 0 && !slices.Contains(in.ImageIds, deref(img.ImageId)) {
		return false
	}
	if len(in.Owners) > 0 && !slices.ContainsFunc(in.Owners, func(owner string) bool { return ownedBy(img, owner) }) {
		return false
	}
	if img.State == ec2types.ImageStateDisabled && !deref(in.IncludeDisabled) {
		return false
	}
	if e.deprecated(img) && !deref(in.IncludeDeprecated) && deref(img.OwnerId) != AccountID {
		return false
	}
	return true
}

func ownedBy(img ec2types.Image, owner string) bool {
	switch owner {
	case "self":
		return deref(img.OwnerId) == AccountID
	case deref(img.OwnerId), deref(img.ImageOwnerAlias):
		return true
	}
	return false
}

func (e *EC2) deprecated(img ec2types.Image) bool {
	if img.DeprecationTime == nil {
		return false
	}
	at, err := time.Parse(imageTimeFormat, *img.DeprecationTime)
	if err != nil {
		return false
	}
	var clk clock.PassiveClock = clock.RealClock{}
	if e.images.clock != nil {
		clk = e.images.clock
	}
	return !at.After(clk.Now())
}

func imageFields(img ec2types.Image) filterFields {
	return func(name string) ([]string, bool) {
		switch name {
		case "image-id":
			return []string{deref(img.ImageId)}, true
		case "name":
			return []string{deref(img.Name)}, true
		case "state":
			return []string{string(img.State)}, true
		case "architecture":
			return []string{string(img.Architecture)}, true
		case "owner-id":
			return []string{deref(img.OwnerId)}, true
		case "owner-alias":
			return []string{deref(img.ImageOwnerAlias)}, true
		case "image-type":
			return []string{string(img.ImageType)}, true
		case "virtualization-type":
			return []string{string(img.VirtualizationType)}, true
		}
		return tagFields(img.Tags, name)
	}
}
