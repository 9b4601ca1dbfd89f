package launchtemplate

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// owned reports whether a launch template EC2 listed is one karp (or
// Karpenter) made for this cluster: named karpenter.k8s.aws/<hash> and
// tagged eks:eks-cluster-name=<cluster> (the tag that marks what
// Karpenter manages for a cluster, and the one the listing filters on).
// Nothing else is ever deleted, whatever filter EC2 applied.
func (p *Provider) owned(lt ec2types.LaunchTemplate) bool {
	return strings.HasPrefix(aws.ToString(lt.LaunchTemplateName), NamePrefix) && tagValue(lt.Tags, awsv1.TagEKSClusterName) == p.opts.ClusterName
}

// tagValue is the value of the tag key, "" when absent.
func tagValue(tags []ec2types.Tag, key string) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// named is the launch template of the name among those EC2 answered a
// describe by name with, if any (an answer may hold others).
func named(lts []ec2types.LaunchTemplate, name string) (ec2types.LaunchTemplate, bool) {
	for _, lt := range lts {
		if aws.ToString(lt.LaunchTemplateName) == name {
			return lt, true
		}
	}
	return ec2types.LaunchTemplate{}, false
}
