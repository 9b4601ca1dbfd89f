package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/explain"
	"github.com/karp-autoscaler/karp/pkg/operator"
)

// clusterSource is where explain and `simulate --disruption` read a
// cluster: a live API server (--kubeconfig) or dump files (-f).
type clusterSource struct {
	kubeconfig string
	dumps      stringList
	catalog    string
	output     string
	gates      gatesFlag
}

func (s *clusterSource) register(fs *flag.FlagSet) {
	fs.StringVar(&s.kubeconfig, "kubeconfig", "", "read the cluster through this kubeconfig (read-only); empty uses $KUBECONFIG, then ~/.kube/config")
	fs.Var(&s.dumps, "f", "read the cluster from a dump instead (`kubectl get nodepools,nodeclaims,nodes,pods,pdb,daemonsets -A -o yaml`); repeatable, - for stdin")
	fs.StringVar(&s.catalog, "catalog", "", "instance-type catalog file (default: the embedded EC2 catalog the kwok provider uses)")
	fs.StringVar(&s.output, "o", explain.OutputText, "output: text or json")
	fs.Var(&s.gates, "feature-gates", "the controller's feature gates (Name=true|false,...; unnamed gates take the controller's defaults); "+
		"unset: apply the cluster's NodeOverlays and keep its CapacityBuffers' room, as a controller with those gates on")
}

func (s *clusterSource) validate() error {
	if s.output != explain.OutputText && s.output != explain.OutputJSON {
		return fmt.Errorf("-o %q: want text or json", s.output)
	}
	return nil
}

// engine reads the cluster and builds the explain engine.
func (s *clusterSource) engine(ctx context.Context, stderr io.Writer) (*explain.Engine, error) {
	types, err := loadInstanceTypes(s.catalog)
	if err != nil {
		return nil, err
	}
	scheme := operator.NewScheme()
	var reader client.Reader
	if len(s.dumps) > 0 {
		objs, warnings, err := explain.ReadDumpFiles(scheme, os.Stdin, s.dumps...)
		if err != nil {
			return nil, err
		}
		for _, w := range warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
		if reader, err = explain.NewObjectReader(scheme, objs); err != nil {
			return nil, err
		}
	} else {
		cfg, err := operator.RestConfig(s.kubeconfig)
		if err != nil {
			return nil, err
		}
		if reader, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			return nil, fmt.Errorf("building client: %w", err)
		}
	}
	return explain.New(ctx, reader, scheme, explain.Options{InstanceTypes: types, FeatureGates: s.gates.gates})
}

// parseInterspersed parses flags that may come before, between or after
// the positional arguments, and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// runExplain is `karp explain`.
func runExplain(args []string, stdout, stderr io.Writer) error {
	var src clusterSource
	fs := flag.NewFlagSet("karp explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	src.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: karp explain pod NAMESPACE/NAME | node NAME | nodepool NAME [--kubeconfig FILE | -f DUMP] [--feature-gates GATES] [-o text|json]")
		fmt.Fprintln(stderr, "\nSays why karp did or did not act: why a pod is pending (per NodePool, with the same reason codes as its")
		fmt.Fprintln(stderr, "FailedScheduling event), why a node is or is not being disrupted (the DisruptionBlocked reason codes),")
		fmt.Fprintln(stderr, "and a NodePool's limits, budgets and due replacements. It runs the controller's own decisions and never writes.\n\nFlags:")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	if len(pos) != 2 {
		fs.Usage()
		return &exitError{code: 1, err: errors.New("expected a kind (pod, node, nodepool) and a name")}
	}
	if err := src.validate(); err != nil {
		return &exitError{code: 1, err: err}
	}
	ctx := context.Background()
	var ask func(*explain.Engine) (any, error)
	switch pos[0] {
	case "pod", "pods", "po":
		ask = func(e *explain.Engine) (any, error) { return e.Pod(ctx, pos[1]) }
	case "node", "nodes", "no", "nodeclaim", "nodeclaims":
		ask = func(e *explain.Engine) (any, error) { return e.Node(ctx, pos[1]) }
	case "nodepool", "nodepools", "np":
		ask = func(e *explain.Engine) (any, error) { return e.NodePool(ctx, pos[1]) }
	default:
		return &exitError{code: 1, err: fmt.Errorf("unknown kind %q: want pod, node or nodepool", pos[0])}
	}
	e, err := src.engine(ctx, stderr)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	report, err := ask(e)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	return explain.Write(stdout, report, src.output)
}

// runSimulateDisruption is `karp simulate --disruption`.
func runSimulateDisruption(args []string, stdout, stderr io.Writer) error {
	var (
		src  clusterSource
		opts explain.DisruptionOptions
		rm   stringList
	)
	fs := flag.NewFlagSet("karp simulate --disruption", flag.ContinueOnError)
	fs.SetOutput(stderr)
	src.register(fs)
	fs.Bool("disruption", true, "simulate the disruption methods over a cluster")
	fs.StringVar(&opts.NodePool, "nodepool", "", "only this NodePool's nodes and commands")
	fs.StringVar(&opts.Method, "method", "", "only this method's commands (emptiness, drift, multi, single, ...)")
	fs.Var(&rm, "remove", "what if this node went away: where its pods would go (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: karp simulate --disruption (--kubeconfig FILE | -f DUMP) [--nodepool NAME] [--method NAME] [--remove NODE] [-o text|json]")
		fmt.Fprintln(stderr, "\nPrints what karp's disruption methods would do now, in order: the nodes it would delete or replace, with")
		fmt.Fprintln(stderr, "what and the $/hour saved, where their pods go, and why every other node stays. Read-only.\n\nFlags:")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	if len(pos) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("unexpected arguments %q", pos)}
	}
	if err := src.validate(); err != nil {
		return &exitError{code: 1, err: err}
	}
	opts.Remove = rm
	ctx := context.Background()
	e, err := src.engine(ctx, stderr)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	report, err := e.Disruption(ctx, opts)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	return explain.Write(stdout, report, src.output)
}
