// Package version tells the AWS provider the cluster's Kubernetes version
// (major.minor), which picks the EKS-optimized AMI an alias resolves to. As
// upstream Karpenter does by default, it asks the API server's discovery
// endpoint (/version) and caches the answer for five minutes, so an
// upgraded control plane moves new nodes to the matching AMIs within that
// time.
package version

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	k8sversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/utils/clock"
)

// CacheTTL is how long a discovered version is reused.
const CacheTTL = 5 * time.Minute

// serverVersion is the slice of client-go's discovery client the provider
// calls.
type serverVersion interface {
	ServerVersion() (*k8sversion.Info, error)
}

// Provider returns the cluster's Kubernetes version. It is safe for
// concurrent use.
type Provider struct {
	discovery serverVersion
	clock     clock.PassiveClock

	mu      sync.Mutex
	version string
	at      time.Time
}

// NewProvider returns a provider asking discovery.
func NewProvider(discovery serverVersion, clk clock.PassiveClock) *Provider {
	return &Provider{discovery: discovery, clock: clk}
}

// Get returns the version as "major.minor" (e.g. "1.31").
func (p *Provider) Get(_ context.Context) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.version != "" && p.clock.Since(p.at) < CacheTTL {
		return p.version, nil
	}
	info, err := p.discovery.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("getting the kubernetes version: %w", err)
	}
	v, err := Parse(info)
	if err != nil {
		return "", err
	}
	p.version, p.at = v, p.clock.Now()
	return v, nil
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
