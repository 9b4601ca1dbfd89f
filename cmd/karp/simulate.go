package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/options"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulate"
)

// exitPodsPending is `karp simulate`'s exit status when some pods would
// stay pending (1 is bad input).
const exitPodsPending = 3

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// simulateOptions are `karp simulate`'s flags.
type simulateOptions struct {
	files           stringList
	catalog         string
	output          string
	schedulerConfig string
	featureGates    gatesFlag
}

// gatesFlag is the controller's --feature-gates; unset (nil) when the flag
// is not given.
type gatesFlag struct{ gates *options.FeatureGates }

func (g *gatesFlag) String() string {
	if g.gates == nil {
		return ""
	}
	return g.gates.String()
}

func (g *gatesFlag) Set(v string) error {
	if g.gates == nil {
		d := options.DefaultFeatureGates()
		g.gates = &d
	}
	return g.gates.Set(v)
}

func parseSimulateFlags(args []string, stderr io.Writer) (*simulateOptions, error) {
	opts := &simulateOptions{}
	fs := flag.NewFlagSet("karp simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&opts.files, "f", "manifest file or directory, - for stdin (repeatable; .yaml, .yml, .json; multi-document and kind: List)")
	fs.Var(&opts.files, "filename", "same as -f")
	fs.StringVar(&opts.catalog, "catalog", "", "instance-type catalog file (default: the embedded EC2 catalog the kwok provider uses)")
	fs.StringVar(&opts.output, "o", simulate.OutputTable, "output: table, json, or yaml (the NodeClaims karp would create)")
	fs.Var(&opts.featureGates, "feature-gates", "the controller's feature gates (Name=true|false,...; unnamed gates take the controller's defaults); "+
		"unset: serve every NodeOverlay, static NodePool, CapacityBuffer and ProvisioningRequest among the manifests")
	fs.StringVar(&opts.schedulerConfig, "scheduler-config", "", "the kube-scheduler default topology spread constraints to apply, as the controller's --scheduler-config (a document, or a file's path)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: karp simulate -f PATH [-f PATH ...] [--catalog FILE] [--scheduler-config FILE] [--feature-gates GATES] [-o table|json|yaml]")
		fmt.Fprintln(stderr, "\nShows which nodes karp would launch for the manifests, what they cost, and why any pod would stay pending.")
		fmt.Fprintln(stderr, "Exit status: 0 all pods placed, 3 some pods would stay pending, 1 bad input.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q (manifests are passed with -f)", fs.Args())
	}
	if len(opts.files) == 0 {
		return nil, errors.New("no manifests: pass at least one -f PATH")
	}
	switch opts.output {
	case simulate.OutputTable, simulate.OutputJSON, simulate.OutputYAML:
	default:
		return nil, fmt.Errorf("-o %q: want table, json or yaml", opts.output)
	}
	return opts, nil
}

// runSimulate is `karp simulate`.
func runSimulate(args []string, stdout, stderr io.Writer) error {
	if slices.ContainsFunc(args, func(a string) bool { return a == "--disruption" || a == "-disruption" || a == "--disruption=true" }) {
		return runSimulateDisruption(args, stdout, stderr)
	}
	opts, err := parseSimulateFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	// A one-shot command that decodes large manifests: trade memory for
	// less garbage-collection work.
	debug.SetGCPercent(400)
	types, err := loadInstanceTypes(opts.catalog)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	schedulerConfig, err := options.LoadSchedulerConfig(opts.schedulerConfig)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	rep, err := simulate.Run(context.Background(), simulate.Options{Paths: opts.files, Stdin: os.Stdin, InstanceTypes: types,
		DefaultSpread: schedulerConfig.Spread, FeatureGates: opts.featureGates.gates})
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	if err := simulate.Write(stdout, rep, opts.output); err != nil {
		return err
	}
	if opts.output != simulate.OutputTable {
		for _, w := range rep.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
	}
	if !rep.AllPlaced() {
		return &exitError{code: exitPodsPending}
	}
	return nil
}

// loadInstanceTypes reads the instance types the kwok provider would
// offer: from the catalog file, or its embedded EC2 catalog when path is
// "" (same labels, zones and spot price model as the provider).
func loadInstanceTypes(path string) ([]*scheduling.InstanceType, error) {
	types, err := kwok.LoadInstanceTypes(path, nil)
	if err != nil && path != "" {
		return nil, fmt.Errorf("--catalog %s: %w", path, err)
	}
	return types, err
}
