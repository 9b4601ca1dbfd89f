package fake

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// ClusterVersion is the Kubernetes version PutCluster gives a cluster: on
// purpose not the local API server's (bin/k8s), so a test can tell which
// of the two a version was read from.
const ClusterVersion = "1.33"

// EKS is a stateful fake of the EKS call the provider makes
// (DescribeCluster). Tests create clusters with PutCluster; describing a
// cluster that does not exist is a ResourceNotFoundException, as in EKS.
type EKS struct {
	Faults

	mu       sync.Mutex
	clusters map[string]ekstypes.Cluster
}

// NewEKS returns a fake with no clusters.
func NewEKS() *EKS {
	return &EKS{clusters: map[string]ekstypes.Cluster{}}
}

// PutCluster creates or replaces the ACTIVE cluster name with its API
// server endpoint and base64 CA bundle, at Kubernetes ClusterVersion.
func (e *EKS) PutCluster(name, endpoint, caData string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clusters[name] = ekstypes.Cluster{
		Name:                 ptr(name),
		Arn:                  ptr(fmt.Sprintf("arn:aws:eks:us-west-2:%s:cluster/%s", AccountID, name)),
		Endpoint:             ptr(endpoint),
		CertificateAuthority: &ekstypes.Certificate{Data: ptr(caData)},
		Status:               ekstypes.ClusterStatusActive,
		Version:              ptr(ClusterVersion),
	}
}

// SetClusterVersion upgrades the named cluster's control plane to version
// ("1.34"); it reports false when there is no such cluster.
func (e *EKS) SetClusterVersion(name, version string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.clusters[name]
	if ok {
		c.Version = ptr(version)
		e.clusters[name] = c
	}
	return ok
}

// DescribeCluster returns the named cluster, or ResourceNotFoundException.
func (e *EKS) DescribeCluster(_ context.Context, in *eks.DescribeClusterInput, _ ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	if err := e.enter("DescribeCluster"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.clusters[deref(in.Name)]
	if !ok {
		return nil, &ekstypes.ResourceNotFoundException{Message: ptr(fmt.Sprintf("No cluster found for name: %s.", deref(in.Name)))}
	}
	return &eks.DescribeClusterOutput{Cluster: &c}, nil
}
