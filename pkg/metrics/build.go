package metrics

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

// Version and Commit describe the build; the image build sets them with
//
//	-ldflags "-X github.com/karp-autoscaler/karp/pkg/metrics.Version=... -X github.com/karp-autoscaler/karp/pkg/metrics.Commit=..."
var (
	Version = "unspecified"
	Commit  = "unspecified"
)

// newBuildInfo returns karpenter_build_info: a constant 1 labelled with
// the version, Go version, architecture and commit of the binary, with
// upstream's name and labels.
func newBuildInfo() prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "build_info",
		Help: "A metric with a constant '1' value labeled by version from which karpenter was built.",
	}, []string{"version", "goversion", "goarch", "commit"})
	g.WithLabelValues(Version, runtime.Version(), runtime.GOARCH, Commit).Set(1)
	return g
}

// BuildInfo is karpenter_build_info for this binary.
var BuildInfo = newBuildInfo()
