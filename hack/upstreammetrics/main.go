// Command upstreammetrics lists every Prometheus metric and every event
// reason upstream Karpenter (kubernetes-sigs/karpenter) and its AWS provider
// (aws/karpenter-provider-aws) define, by reading their Go sources with
// go/parser: it finds the metric constructors (operatorpkg's
// NewPrometheus{Gauge,Counter,Histogram,Summary}, client_golang's
// New{Gauge,Counter,Histogram,Summary}[Vec] and NewDesc) and the
// events.Event literals, and resolves the string constants they name by
// package and identifier across the two trees. The metrics operatorpkg's
// status controllers build at runtime are added from a table
// (operatorpkg.go). karp's parity test (pkg/metrics/parity) compares karp's
// registry and event reasons with the files this writes.
//
// It uses only the standard library and reads checked-out sources, so it
// needs neither upstream module as a dependency. Usage:
//
//	go run ./hack/upstreammetrics -core <karpenter checkout> -aws <provider checkout> \
//	    -core-commit <sha> -aws-ref <tag> -aws-commit <sha> -out pkg/metrics/testdata
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

const (
	corePath = "sigs.k8s.io/karpenter"
	awsPath  = "github.com/aws/karpenter-provider-aws"
)

func main() {
	core := flag.String("core", "", "kubernetes-sigs/karpenter checkout (the directory holding pkg/)")
	aws := flag.String("aws", "", "aws/karpenter-provider-aws checkout (the directory holding pkg/)")
	coreCommit := flag.String("core-commit", "", "commit of the karpenter checkout")
	awsRef := flag.String("aws-ref", "", "tag of the provider checkout")
	awsCommit := flag.String("aws-commit", "", "commit of the provider checkout")
	out := flag.String("out", "", "directory to write upstream-metrics-<ref>.yaml and upstream-events-<ref>.yaml into")
	suffix := flag.String("suffix", "v1.14", "suffix of the written file names")
	flag.Parse()
	if *core == "" || *aws == "" || *coreCommit == "" || *awsCommit == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*core, *aws, header{CoreCommit: *coreCommit, AWSRef: *awsRef, AWSCommit: *awsCommit}, *out, *suffix); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(core, aws string, h header, out, suffix string) error {
	u := newUniverse()
	if err := u.load(core, corePath, "core"); err != nil {
		return err
	}
	if err := u.load(aws, awsPath, "aws"); err != nil {
		return err
	}
	metrics, err := u.metrics()
	if err != nil {
		return err
	}
	metrics = append(metrics, operatorpkgMetrics()...)
	events, err := u.events()
	if err != nil {
		return err
	}
	events = append(events, operatorpkgEvents()...)
	if err := os.WriteFile(filepath.Join(out, "upstream-metrics-"+suffix+".yaml"), renderMetrics(h, metrics), 0o644); err != nil { //nolint:gosec // testdata is world-readable
		return err
	}
	return os.WriteFile(filepath.Join(out, "upstream-events-"+suffix+".yaml"), renderEvents(h, events), 0o644) //nolint:gosec // testdata is world-readable
}
