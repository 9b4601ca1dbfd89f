package fake

import (
	"context"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// LaunchTemplateData returns the data of the named launch template.
func (e *EC2) LaunchTemplateData(name string) (*ec2types.RequestLaunchTemplateData, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	lt, ok := e.launch.templates[name]
	if !ok {
		return nil, false
	}
	return lt.data, true
}

// CreateLaunchTemplate stores a launch template; names are unique.
func (e *EC2) CreateLaunchTemplate(_ context.Context, in *ec2.CreateLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error) {
	if err := e.enterCall("CreateLaunchTemplate", in.DryRun); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	name := aws.ToString(in.LaunchTemplateName)
	if name == "" || in.LaunchTemplateData == nil {
		return nil, launchErr("MissingParameter", "The request must contain the parameters LaunchTemplateName and LaunchTemplateData")
	}
	if _, ok := e.launch.templates[name]; ok {
		return nil, launchErr(codeLaunchTemplateNameExists, "Launch template name already in use.")
	}
	lt := &launchTemplate{id: e.launch.id("lt"), name: name, data: in.LaunchTemplateData, created: e.launch.clock.Now()}
	for _, spec := range in.TagSpecifications {
		if spec.ResourceType == ec2types.ResourceTypeLaunchTemplate {
			lt.tags = append(lt.tags, spec.Tags...)
		}
	}
	e.launch.templates[name] = lt
	return &ec2.CreateLaunchTemplateOutput{LaunchTemplate: lt.describe()}, nil
}

func (lt *launchTemplate) describe() *ec2types.LaunchTemplate {
	return &ec2types.LaunchTemplate{
		LaunchTemplateId:     aws.String(lt.id),
		LaunchTemplateName:   aws.String(lt.name),
		CreateTime:           aws.Time(lt.created),
		DefaultVersionNumber: aws.Int64(1),
		LatestVersionNumber:  aws.Int64(1),
		Tags:                 slices.Clone(lt.tags),
	}
}

// DescribeLaunchTemplates lists launch templates by name, ID and tag
// filters, paginated. An unknown name fails the call, as in EC2.
func (e *EC2) DescribeLaunchTemplates(_ context.Context, in *ec2.DescribeLaunchTemplatesInput, _ ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error) {
	if err := e.enter("DescribeLaunchTemplates"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	in = e.describeLaunchTemplatesInput(in)
	for _, name := range in.LaunchTemplateNames {
		if _, ok := e.launch.templates[name]; !ok {
			return nil, launchErr(codeLaunchTemplateNameNotFound, "At least one of the launch templates specified in the request does not exist.")
		}
	}
	var all []ec2types.LaunchTemplate
	for _, lt := range e.launch.templates {
		if len(in.LaunchTemplateNames) > 0 && !slices.Contains(in.LaunchTemplateNames, lt.name) {
			continue
		}
		if len(in.LaunchTemplateIds) > 0 && !slices.Contains(in.LaunchTemplateIds, lt.id) {
			continue
		}
		if !tagsMatch(lt.tags, in.Filters) {
			continue
		}
		all = append(all, *lt.describe())
	}
	slices.SortFunc(all, func(a, b ec2types.LaunchTemplate) int {
		return strings.Compare(aws.ToString(a.LaunchTemplateId), aws.ToString(b.LaunchTemplateId))
	})
	page, next, err := paginate(all, in.NextToken, in.MaxResults)
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeLaunchTemplatesOutput{LaunchTemplates: page, NextToken: next}, nil
}

// DeleteLaunchTemplate deletes a launch template by ID or name.
func (e *EC2) DeleteLaunchTemplate(_ context.Context, in *ec2.DeleteLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error) {
	if err := e.enter("DeleteLaunchTemplate"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	for name, lt := range e.launch.templates {
		if (in.LaunchTemplateId != nil && lt.id == *in.LaunchTemplateId) || (in.LaunchTemplateName != nil && name == *in.LaunchTemplateName) {
			delete(e.launch.templates, name)
			return &ec2.DeleteLaunchTemplateOutput{LaunchTemplate: lt.describe()}, nil
		}
	}
	if in.LaunchTemplateId != nil {
		return nil, launchErr(codeLaunchTemplateIDNotFound, "The specified launch template, with template ID %s, does not exist.", *in.LaunchTemplateId)
	}
	return nil, launchErr(codeLaunchTemplateNameNotFound, "The specified launch template, with template name %s, does not exist.", aws.ToString(in.LaunchTemplateName))
}

// reservationOf is the capacity reservation a launch template targets.
func reservationOf(lt *launchTemplate) string {
	if spec := lt.data.CapacityReservationSpecification; spec != nil && spec.CapacityReservationTarget != nil {
		return aws.ToString(spec.CapacityReservationTarget.CapacityReservationId)
	}
	return ""
}
