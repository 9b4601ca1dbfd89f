// Package version tells the AWS provider the cluster's Kubernetes version
// (major.minor), which picks the EKS-optimized AMI an alias resolves to. As
// upstream Karpenter does by default, it asks the API server's discovery
// endpoint (/version); with --eks-control-plane (FromEKS) it reads the
// cluster's version from eks:DescribeCluster instead, as upstream does with
// that setting. Either answer is cached for five minutes, so an upgraded
// control plane moves new nodes to the matching AMIs within that time.
//
// The EKS SDK sits behind the one-call interface declared here.
package version

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eks"
	k8sversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// CacheTTL is how long a discovered version is reused.
const CacheTTL = 5 * time.Minute

// The Kubernetes minor versions the AWS provider supports (upstream's
// range); others are used, with an error logged.
const (
	MinSupportedMinor = 26
	MaxSupportedMinor = 36
)

// serverVersion is the slice of client-go's discovery client the provider
// calls.
type serverVersion interface {
	ServerVersion() (*k8sversion.Info, error)
}

// clusterDescriber is the EKS call the version is read with under
// --eks-control-plane.
type clusterDescriber interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, opts ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// Provider returns the cluster's Kubernetes version. It is safe for
// concurrent use.
type Provider struct {
	discovery serverVersion
	clock     clock.PassiveClock
	// fromEKS: eks is asked instead of discovery for clusterName's
	// version.
	fromEKS     bool
	eks         clusterDescriber
	clusterName string

	mu      sync.Mutex
	version string
	at      time.Time
}

// NewProvider returns a provider asking discovery.
func NewProvider(discovery serverVersion, clk clock.PassiveClock) *Provider {
	return &Provider{discovery: discovery, clock: clk}
}

// FromEKS makes the provider read the version of the EKS cluster
// clusterName from eks:DescribeCluster (its cluster.version) instead of the
// API server's discovery endpoint: upstream's --eks-control-plane. A nil
// api makes Get fail. It returns p.
func (p *Provider) FromEKS(api clusterDescriber, clusterName string) *Provider {
	p.fromEKS, p.eks, p.clusterName = true, api, clusterName
	return p
}

// Get returns the version as "major.minor" (e.g. "1.31"). A new version is
// logged, and one outside the supported range logged as an error.
func (p *Provider) Get(ctx context.Context) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.version != "" && p.clock.Since(p.at) < CacheTTL {
		return p.version, nil
	}
	v, err := p.read(ctx)
	if err != nil {
		return "", err
	}
	if v != p.version {
		logger := log.FromContext(ctx)
		logger.Info("discovered kubernetes version", "version", v)
		if !Supported(v) {
			logger.Error(nil, "kubernetes version outside the supported range, AMI aliases may resolve nothing",
				"version", v, "supported", fmt.Sprintf("1.%d-1.%d", MinSupportedMinor, MaxSupportedMinor))
		}
	}
	p.version, p.at = v, p.clock.Now()
	return v, nil
}

// read asks EKS or discovery for the version.
func (p *Provider) read(ctx context.Context) (string, error) {
	if !p.fromEKS {
		info, err := p.discovery.ServerVersion()
		if err != nil {
			return "", fmt.Errorf("getting the kubernetes version: %w", err)
		}
		return Parse(info)
	}
	if p.eks == nil {
		return "", errors.New("no EKS client to read the kubernetes version with eks:DescribeCluster (--eks-control-plane=true)")
	}
	out, err := p.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: &p.clusterName})
	if err != nil {
		return "", fmt.Errorf("reading the kubernetes version of EKS cluster %q with eks:DescribeCluster (--eks-control-plane=true); "+
			"grant the action or unset --eks-control-plane (EKS_CONTROL_PLANE) to ask the API server: %w", p.clusterName, err)
	}
	var reported string
	if out.Cluster != nil && out.Cluster.Version != nil {
		reported = *out.Cluster.Version
	}
	v, err := ParseMajorMinor(reported)
	if err != nil {
		return "", fmt.Errorf("reading the kubernetes version of EKS cluster %q with eks:DescribeCluster (--eks-control-plane=true): %w", p.clusterName, err)
	}
	return v, nil
}

// ParseMajorMinor checks a "major.minor" version as EKS reports it
// ("1.31") and returns it.
func ParseMajorMinor(version string) (string, error) {
	major, minor, ok := strings.Cut(version, ".")
	if !ok {
		return "", fmt.Errorf("kubernetes version %q is not major.minor", version)
	}
	if _, err := strconv.Atoi(major); err != nil {
		return "", fmt.Errorf("kubernetes version %q: major %q is not a number", version, major)
	}
	if _, err := strconv.Atoi(minor); err != nil {
		return "", fmt.Errorf("kubernetes version %q: minor %q is not a number", version, minor)
	}
	return version, nil
}

// Supported reports whether version is 1.MinSupportedMinor through
// 1.MaxSupportedMinor.
func Supported(version string) bool {
	major, _, _ := strings.Cut(version, ".")
	minor, err := Minor(version)
	return err == nil && major == "1" && minor >= MinSupportedMinor && minor <= MaxSupportedMinor
}

// Parse returns major.minor from the API server's answer; providers append
// a "+" to the minor version (e.g. "31+"), which is dropped.
func Parse(info *k8sversion.Info) (string, error) {
	major := strings.TrimSuffix(info.Major, "+")
	minor := strings.TrimSuffix(info.Minor, "+")
	if _, err := strconv.Atoi(major); err != nil {
		return "", fmt.Errorf("parsing kubernetes version %q: major %q is not a number", info.GitVersion, info.Major)
	}
	if _, err := strconv.Atoi(minor); err != nil {
		return "", fmt.Errorf("parsing kubernetes version %q: minor %q is not a number", info.GitVersion, info.Minor)
	}
	return major + "." + minor, nil
}

// Minor returns the minor number of a "major.minor" version.
func Minor(version string) (int, error) {
	_, minor, ok := strings.Cut(version, ".")
	if !ok {
		return 0, fmt.Errorf("kubernetes version %q is not major.minor", version)
	}
	return strconv.Atoi(minor)
}
