package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	pricingapi "github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	awsinterruption "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/zonalshift"
)

// Clients are the AWS API clients the provider calls: the SDK's in
// production (built by pkg/operator), the stateful fakes in package fake
// in tests.
type Clients struct {
	// Region is where the clients send; instance types, prices and
	// instance profiles are the region's.
	Region  string
	EC2     EC2API
	SSM     SSMAPI
	IAM     IAMAPI
	Pricing PricingAPI
	// EKS is read when Options.ClusterEndpoint is empty, with
	// Options.EnableZonalShift and with Options.EKSControlPlane.
	EKS EKSAPI
	// SQS is read only when Options.InterruptionQueue is set.
	SQS SQSAPI
	// ARCZonalShift is read only with Options.EnableZonalShift.
	ARCZonalShift ARCZonalShiftAPI
}

// EC2API is every EC2 call the AWS provider's parts make.
type EC2API interface {
	instance.EC2API
	DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeSpotPriceHistory(ctx context.Context, in *ec2.DescribeSpotPriceHistoryInput, opts ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
	DescribeImages(ctx context.Context, in *ec2.DescribeImagesInput, opts ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
	DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	DescribeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
	DescribeCapacityReservations(ctx context.Context, in *ec2.DescribeCapacityReservationsInput, opts ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error)
	DescribePlacementGroups(ctx context.Context, in *ec2.DescribePlacementGroupsInput, opts ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error)
	DescribeInstanceStatus(ctx context.Context, in *ec2.DescribeInstanceStatusInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error)
	CreateLaunchTemplate(ctx context.Context, in *ec2.CreateLaunchTemplateInput, opts ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error)
	DescribeLaunchTemplates(ctx context.Context, in *ec2.DescribeLaunchTemplatesInput, opts ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	DeleteLaunchTemplate(ctx context.Context, in *ec2.DeleteLaunchTemplateInput, opts ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error)
	// RunInstances is only dry-run, by EC2NodeClass validation.
	RunInstances(ctx context.Context, in *ec2.RunInstancesInput, opts ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error)
}

// SSMAPI is the SSM call AMI aliases are resolved with.
type SSMAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// IAMAPI are the IAM calls instance profiles are looked up, created and
// deleted with.
type IAMAPI interface {
	instanceprofile.IAMAPI
}

// PricingAPI is the Price List call on-demand prices come from.
type PricingAPI interface {
	GetProducts(ctx context.Context, in *pricingapi.GetProductsInput, opts ...func(*pricingapi.Options)) (*pricingapi.GetProductsOutput, error)
}

// EKSAPI is the EKS call the API server endpoint is discovered with when
// --cluster-endpoint is not set, and the Kubernetes version read with
// under --eks-control-plane.
type EKSAPI interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, opts ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// ARCZonalShiftAPI is the ARC call zonal shifts are read with.
type ARCZonalShiftAPI interface {
	zonalshift.ARCAPI
}

// SQSAPI are the SQS calls interruption handling makes.
type SQSAPI interface {
	awsinterruption.SQSAPI
}
