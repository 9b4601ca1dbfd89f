package aws

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/eks"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// clusterEndpoint is the API server URL nodes join: the flag when set, else
// the endpoint EKS reports for the cluster (as upstream, also with
// --isolated-vpc, where the call goes through the EKS VPC endpoint). A
// failed call stops the process at start: the controller's own address is
// the kubernetes Service IP inside a pod, which a new node cannot reach.
func clusterEndpoint(ctx context.Context, endpoint, clusterName string, api EKSAPI) (string, error) {
	if endpoint != "" {
		return endpoint, nil
	}
	if api == nil {
		return "", errors.New("no EKS client to discover the API server endpoint with eks:DescribeCluster; set --cluster-endpoint (CLUSTER_ENDPOINT)")
	}
	out, err := api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: &clusterName})
	if err != nil {
		return "", fmt.Errorf("discovering the API server endpoint of EKS cluster %q (--cluster-name) with eks:DescribeCluster; "+
			"grant the action or set --cluster-endpoint (CLUSTER_ENDPOINT): %w", clusterName, err)
	}
	if out.Cluster == nil || out.Cluster.Endpoint == nil || *out.Cluster.Endpoint == "" {
		return "", fmt.Errorf("eks:DescribeCluster reports no API server endpoint for cluster %q (--cluster-name); "+
			"set --cluster-endpoint (CLUSTER_ENDPOINT)", clusterName)
	}
	return *out.Cluster.Endpoint, nil
}

// cluster are the facts about the cluster that go into user data.
type cluster struct {
	endpoint    string
	caBundle    string
	serviceCIDR string
	dnsIP       string
}

// clusterFacts resolves the API server CA (the flag, else the controller's
// own rest config, as upstream), kube-dns's ClusterIP and the service CIDR
// (from the cluster's ServiceCIDR object). The last two are only logged
// when missing: custom DNS setups have no kube-dns, and AL2023 launches
// report the missing CIDR themselves.
func clusterFacts(ctx context.Context, endpoint, caBundle string, restConfig *rest.Config, reader client.Reader) (cluster, error) {
	logger := log.FromContext(ctx)
	ca, err := clusterCABundle(caBundle, restConfig)
	if err != nil {
		return cluster{}, err
	}
	c := cluster{endpoint: endpoint, caBundle: ca}
	dns := &corev1.Service{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-dns"}, dns); err != nil {
		logger.Error(err, "looking up kube-dns; nodes use their AMI's default cluster DNS")
	} else {
		c.dnsIP = dns.Spec.ClusterIP
	}
	cidr := &networkingv1.ServiceCIDR{}
	if err := reader.Get(ctx, client.ObjectKey{Name: "kubernetes"}, cidr); err != nil || len(cidr.Spec.CIDRs) == 0 {
		logger.Error(err, "looking up the service CIDR (ServiceCIDR kubernetes); AL2023 launches need it")
	} else {
		c.serviceCIDR = cidr.Spec.CIDRs[0]
	}
	return c, nil
}

// clusterCABundle is the base64 CA nodes trust for the API server: the flag
// when set, else the CA of the controller's own connection (as upstream:
// in a pod, the service account's CA, which is the cluster's).
func clusterCABundle(caBundle string, restConfig *rest.Config) (string, error) {
	if caBundle != "" {
		return caBundle, nil
	}
	ca := restConfig.CAData
	if len(ca) == 0 && restConfig.CAFile != "" {
		raw, err := os.ReadFile(restConfig.CAFile)
		if err != nil {
			return "", fmt.Errorf("reading the API server CA for --cluster-ca-bundle: %w", err)
		}
		ca = raw
	}
	return base64.StdEncoding.EncodeToString(ca), nil
}
