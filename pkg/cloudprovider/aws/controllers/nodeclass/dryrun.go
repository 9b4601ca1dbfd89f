package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"github.com/mitchellh/hashstructure/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
)

// dryRunTTL is how long a dry run's verdict stands for an unchanged
// NodeClass (upstream's validation cache TTL).
const dryRunTTL = 30 * time.Minute

// dryRunMessages prefix the AWS error's classified message in the
// condition, as upstream words them.
var dryRunMessages = map[string]string{
	awsv1.ConditionReasonCreateFleetAuthFailed:  "Controller isn't authorized to call ec2:CreateFleet",
	awsv1.ConditionReasonCreateLTAuthFailed:     "Controller isn't authorized to call ec2:CreateLaunchTemplate",
	awsv1.ConditionReasonRunInstancesAuthFailed: "Controller isn't authorized to call ec2:RunInstances",
	awsv1.ConditionReasonUserDataSizeExceeded:   "ec2:CreateLaunchTemplate rejected the rendered user data as too large",
}

// dryRunEC2 are the launch calls dry-run against EC2.
type dryRunEC2 interface {
	CreateFleet(ctx context.Context, in *ec2.CreateFleetInput, opts ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error)
	RunInstances(ctx context.Context, in *ec2.RunInstancesInput, opts ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error)
}

// templateEnsurer creates the launch template the dry runs launch with.
type templateEnsurer interface {
	EnsureAll(ctx context.Context, req launchtemplate.Request) ([]*launchtemplate.LaunchTemplate, error)
}

// instanceTypeLister lists the NodeClass's instance types.
type instanceTypeLister interface {
	List(ctx context.Context, nodeClass *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error)
}

// DryRun checks, as upstream's validation does, that the controller may
// make the launch calls: it creates the launch template one instance type
// would launch with, then dry-runs CreateFleet and RunInstances with it,
// so a missing IAM permission shows on ValidationSucceeded rather than at
// the first launch. Verdicts are cached per NodeClass and the status,
// spec, annotations and tags they were reached with, for 30 minutes.
type DryRun struct {
	// kubeClient lists the NodePools; nil treats every class as unused.
	kubeClient  client.Reader
	ec2         dryRunEC2
	templates   templateEnsurer
	types       instanceTypeLister
	clusterName string
	clock       clock.PassiveClock

	mu sync.Mutex
	// verdicts holds each NodeClass's latest verdict; a new key replaces it.
	verdicts map[string]dryRunVerdict
}

type dryRunVerdict struct {
	key     string
	reason  string
	message string
	expires time.Time
}

// NewDryRun builds the launch dry runs over the NodePools (kubeClient),
// EC2, the launch template provider and the instance type provider.
func NewDryRun(kubeClient client.Reader, api dryRunEC2, templates templateEnsurer, types instanceTypeLister, clusterName string, clk clock.PassiveClock) *DryRun {
	return &DryRun{kubeClient: kubeClient, ec2: api, templates: templates, types: types, clusterName: clusterName, clock: clk, verdicts: map[string]dryRunVerdict{}}
}

// check returns the reason and message ValidationSucceeded is False with,
// both empty when the calls are authorized. An error is transient
// (throttling, an EC2 fault, an instance profile not visible yet): nothing
// is cached and the caller retries.
func (d *DryRun) check(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (string, string, error) {
	tags := d.tags(nodeClass)
	key, err := dryRunKey(nodeClass, tags)
	if err != nil {
		return "", "", err
	}
	d.mu.Lock()
	v, ok := d.verdicts[nodeClass.Name]
	d.mu.Unlock()
	if ok && v.key == key && d.clock.Now().Before(v.expires) {
		return v.reason, v.message, nil
	}
	reason, message, err := d.run(ctx, nodeClass, tags)
	if err != nil {
		return "", "", err
	}
	d.mu.Lock()
	d.verdicts[nodeClass.Name] = dryRunVerdict{key: key, reason: reason, message: message, expires: d.clock.Now().Add(dryRunTTL)}
	d.mu.Unlock()
	return reason, message, nil
}

// forget drops the verdict of a deleted NodeClass, so one created again
// with its name is checked afresh. A nil DryRun has none.
func (d *DryRun) forget(name string) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.verdicts, name)
}

// run makes the three checks in upstream's order; the first that fails
// decides.
func (d *DryRun) run(ctx context.Context, nodeClass *awsv1.EC2NodeClass, tags map[string]string) (string, string, error) {
	// 1. The launch template, created for real as a launch would.
	template, reason, err := d.template(ctx, nodeClass, tags)
	if err != nil || reason != "" {
		return reason, failureMessage(reason, err), ignoreVerdict(err, reason)
	}
	// 2. CreateFleet over the template's type in every subnet.
	err = ignoreDryRunOperation(d.fleet(ctx, nodeClass, template, tags))
	switch {
	case err == nil:
	case isTransient(err):
		return "", "", fmt.Errorf("dry-running ec2:CreateFleet: %w", err)
	case errorCode(err) == codeUnauthorized:
		log.FromContext(ctx).Error(err, "unauthorized to call ec2:CreateFleet")
		return awsv1.ConditionReasonCreateFleetAuthFailed, failureMessage(awsv1.ConditionReasonCreateFleetAuthFailed, err), nil
	default:
		return "", "", fmt.Errorf("validating ec2:CreateFleet authorization: %w", err)
	}
	// 3. RunInstances, subnet by subnet until one is authorized; the first
	// subnet's error decides.
	err = d.runInstances(ctx, nodeClass, template, tags)
	switch {
	case err == nil:
		return "", "", nil
	case isTransient(err) || isInstanceProfileNotFound(err):
		return "", "", fmt.Errorf("dry-running ec2:RunInstances: %w", err)
	case errorCode(err) == codeUnauthorized:
		log.FromContext(ctx).Error(err, "unauthorized to call ec2:RunInstances")
		return awsv1.ConditionReasonRunInstancesAuthFailed, failureMessage(awsv1.ConditionReasonRunInstancesAuthFailed, err), nil
	default:
		return "", "", fmt.Errorf("validating ec2:RunInstances authorization: %w", err)
	}
}

// template ensures the launch template of one instance type, on-demand.
// A verdict is a reason; an error is not one.
func (d *DryRun) template(ctx context.Context, nodeClass *awsv1.EC2NodeClass, tags map[string]string) (*launchtemplate.LaunchTemplate, string, error) {
	shape, err := d.shape(ctx, nodeClass)
	if err != nil {
		return nil, "", err
	}
	templates, err := d.templates.EnsureAll(ctx, launchtemplate.Request{
		NodeClass: nodeClass, NodeClaim: shape.nodeClaim, InstanceTypes: []*cloudprovider.InstanceType{shape.instanceType},
		CapacityType: karpv1.CapacityTypeOnDemand, Tags: tags,
	})
	switch {
	case err == nil:
		return templates[0], "", nil
	case isTransient(err):
		return nil, "", fmt.Errorf("creating the dry runs' launch template: %w", err)
	case errorCode(err) == "InvalidUserData.Malformed" && strings.Contains(err.Error(), "User data is limited to"):
		log.FromContext(ctx).Error(err, "ec2:CreateLaunchTemplate rejected the rendered user data as exceeding the size limit")
		return nil, awsv1.ConditionReasonUserDataSizeExceeded, err
	case errorCode(err) == codeUnauthorized:
		log.FromContext(ctx).Error(err, "unauthorized to call ec2:CreateLaunchTemplate")
		return nil, awsv1.ConditionReasonCreateLTAuthFailed, err
	default:
		return nil, "", fmt.Errorf("validating ec2:CreateLaunchTemplate authorization: %w", err)
	}
}

// fleet dry-runs an on-demand instant fleet: the template's types in every
// subnet of the status, without retries.
func (d *DryRun) fleet(ctx context.Context, nodeClass *awsv1.EC2NodeClass, template *launchtemplate.LaunchTemplate, tags map[string]string) error {
	cfg := ec2types.FleetLaunchTemplateConfigRequest{LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{
		LaunchTemplateName: aws.String(template.Name), Version: aws.String("$Latest"),
	}}
	for _, it := range template.InstanceTypes {
		for _, s := range nodeClass.Status.Subnets {
			cfg.Overrides = append(cfg.Overrides, ec2types.FleetLaunchTemplateOverridesRequest{
				InstanceType: ec2types.InstanceType(it.Name), SubnetId: aws.String(s.ID),
			})
		}
	}
	_, err := d.ec2.CreateFleet(ctx, &ec2.CreateFleetInput{
		DryRun: aws.Bool(true),
		Type:   ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
		},
		OnDemandOptions:       &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{cfg},
		TagSpecifications:     tagSpecs(tags, ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet),
	}, noRetries)
	return err
}

// runInstances dry-runs one instance per subnet until one is authorized,
// and returns the first subnet's error otherwise.
func (d *DryRun) runInstances(ctx context.Context, nodeClass *awsv1.EC2NodeClass, template *launchtemplate.LaunchTemplate, tags map[string]string) error {
	var first error
	for i, s := range nodeClass.Status.Subnets {
		_, err := d.ec2.RunInstances(ctx, &ec2.RunInstancesInput{
			DryRun:   aws.Bool(true),
			MinCount: aws.Int32(1),
			MaxCount: aws.Int32(1),
			LaunchTemplate: &ec2types.LaunchTemplateSpecification{
				LaunchTemplateName: aws.String(template.Name), Version: aws.String("$Latest"),
			},
			InstanceType:      ec2types.InstanceType(template.InstanceTypes[0].Name),
			NetworkInterfaces: interfacesIn(nodeClass, s.ID),
			TagSpecifications: tagSpecs(tags, ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeNetworkInterface),
		}, noRetries)
		if err = ignoreDryRunOperation(err); err == nil {
			return nil
		}
		if i == 0 {
			first = err
		}
	}
	return first
}

// interfacesIn are the network interfaces of a dry-run instance in subnet:
// the NodeClass's layout, or one primary interface.
func interfacesIn(nodeClass *awsv1.EC2NodeClass, subnet string) []ec2types.InstanceNetworkInterfaceSpecification {
	if len(nodeClass.Spec.NetworkInterfaces) == 0 {
		return []ec2types.InstanceNetworkInterfaceSpecification{{DeviceIndex: aws.Int32(0), SubnetId: aws.String(subnet)}}
	}
	out := make([]ec2types.InstanceNetworkInterfaceSpecification, 0, len(nodeClass.Spec.NetworkInterfaces))
	for _, ni := range nodeClass.Spec.NetworkInterfaces {
		out = append(out, ec2types.InstanceNetworkInterfaceSpecification{
			NetworkCardIndex: aws.Int32(ni.NetworkCardIndex),
			DeviceIndex:      aws.Int32(ni.DeviceIndex),
			InterfaceType:    aws.String(string(ni.InterfaceType)),
			SubnetId:         aws.String(subnet),
		})
	}
	return out
}

// tags are what a launch for the NodeClass tags its resources with, for a
// NodeClaim of no NodePool (as upstream's validation builds them).
func (d *DryRun) tags(nodeClass *awsv1.EC2NodeClass) map[string]string {
	tags := maps.Clone(nodeClass.Spec.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[awsv1.ClusterTagKey(d.clusterName)] = "owned"
	tags[awsv1.TagEKSClusterName] = d.clusterName
	tags[awsv1.TagNodePool] = ""
	tags[awsv1.TagNodeClass] = nodeClass.Name
	return tags
}

func tagSpecs(tags map[string]string, kinds ...ec2types.ResourceType) []ec2types.TagSpecification {
	keys := slices.Sorted(maps.Keys(tags))
	ec2Tags := make([]ec2types.Tag, 0, len(keys))
	for _, k := range keys {
		ec2Tags = append(ec2Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	out := make([]ec2types.TagSpecification, 0, len(kinds))
	for _, kind := range kinds {
		out = append(out, ec2types.TagSpecification{ResourceType: kind, Tags: ec2Tags})
	}
	return out
}

// noRetries sends a dry run once: a throttled one is retried by the
// reconcile's backoff, not by the SDK.
func noRetries(o *ec2.Options) { o.Retryer = aws.NopRetryer{} }

// dryRunKey names a NodeClass's verdict: what the dry runs were made with.
func dryRunKey(nodeClass *awsv1.EC2NodeClass, tags map[string]string) (string, error) {
	hash, err := hashstructure.Hash([]any{
		nodeClass.Status.Subnets,
		nodeClass.Status.SecurityGroups,
		nodeClass.Status.AMIs,
		nodeClass.Status.InstanceProfile,
		nodeClass.Spec,
		nodeClass.Annotations,
		tags,
	}, hashstructure.FormatV2, &hashstructure.HashOptions{SlicesAsSets: true})
	if err != nil {
		return "", fmt.Errorf("hashing ec2nodeclass for the dry runs: %w", err)
	}
	return fmt.Sprintf("%s:%016x", nodeClass.Name, hash), nil
}

const (
	codeDryRun       = "DryRunOperation"
	codeUnauthorized = "UnauthorizedOperation"
)

func errorCode(err error) string {
	if apiErr, ok := errors.AsType[smithy.APIError](err); ok {
		return apiErr.ErrorCode()
	}
	return ""
}

// ignoreDryRunOperation is nil for EC2's answer to an authorized dry run.
func ignoreDryRunOperation(err error) error {
	if errorCode(err) == codeDryRun {
		return nil
	}
	return err
}

// isTransient is throttling or an EC2 fault: the call is tried again.
func isTransient(err error) bool {
	apiErr, ok := errors.AsType[smithy.APIError](err)
	if !ok {
		return false
	}
	return apiErr.ErrorCode() == "RequestLimitExceeded" || apiErr.ErrorFault() == smithy.FaultServer
}

// isInstanceProfileNotFound is EC2 not seeing the status's instance
// profile yet (IAM is eventually consistent).
func isInstanceProfileNotFound(err error) bool {
	return errorCode(err) == "InvalidParameterValue" && strings.Contains(err.Error(), "Invalid IAM Instance Profile name")
}

// ignoreVerdict drops the error behind a verdict: it is in the message.
func ignoreVerdict(err error, reason string) error {
	if reason != "" {
		return nil
	}
	return err
}

// failureMessage is upstream's "<what was refused>: <why>" message.
func failureMessage(reason string, err error) string {
	if reason == "" {
		return ""
	}
	return dryRunMessages[reason] + ": " + classify(err)
}

// classify words an authorization error as upstream does: the kind of
// deny, not the AWS text (which carries an encoded message and request
// IDs).
func classify(err error) string {
	text := err.Error()
	switch {
	case strings.Contains(text, "User data is limited to"):
		return "Rendered user data exceeds the EC2 user data size limit"
	case strings.Contains(text, "with an explicit deny in a permissions boundary"):
		return "User is not authorized to perform this operation due to a permission boundary"
	case strings.Contains(text, "with an explicit deny in a service control policy"):
		return "User is not authorized to perform this operation due to a service control policy"
	case strings.Contains(text, "Not authorized for images"):
		return "User is not authorized for AMI used in instance launch"
	case strings.Contains(text, "UnauthorizedOperation"), strings.Contains(text, "AccessDenied"), strings.Contains(text, "AuthFailure"):
		return "User is not authorized to perform this operation because no identity-based policy allows it"
	}
	return stableMessage(err)
}
