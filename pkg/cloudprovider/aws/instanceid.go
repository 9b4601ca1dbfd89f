package aws

import "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"

// InstanceID returns the EC2 instance ID a providerID names
// (aws:///<zone>/<instance-id>). The garbage collector matches instances
// to NodeClaims and Nodes by it rather than by whole providerIDs, which
// differ when one of them was recorded without its zone.
func (c *CloudProvider) InstanceID(providerID string) (string, error) {
	return instance.ParseProviderID(providerID)
}
