// Command karp is the karp node autoscaler: one binary with subcommands.
//
// main only parses the subcommand name and hands the remaining arguments to
// the subcommand; each subcommand owns its flags (flags → Options → deps) and
// holds no decision logic of its own.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// exitError carries a specific process exit status out of a subcommand
// (for example `karp simulate` exits 3 when some pods stay pending).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// subcommand is one `karp <name>` entry point.
type subcommand struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// subcommands lists every `karp` subcommand, one entry per concern.
func subcommands() map[string]subcommand {
	return map[string]subcommand{
		"version":    {summary: "print the karp version", run: runVersion},
		"up":         {summary: "start a local control plane (etcd, kube-apiserver, scheduler, controller-manager, kwok)", run: runUp},
		"down":       {summary: "stop the local control plane started by `karp up`", run: runDown},
		"simulate":   {summary: "dry-run: the nodes karp would launch for manifests, their cost, and why pods stay pending; --disruption: what it would disrupt now", run: runSimulate},
		"explain":    {summary: "why a pod is pending, why a node is or is not being disrupted, a NodePool's limits and budgets (read-only)", run: runExplain},
		"controller": {summary: "run the karp controller (leader-elected; provisions and manages nodes)", run: runController},
		"run":        {summary: "local cluster + karp controller (kwok, or AWS on a simulated account) + manifests, with a live view of nodes; Ctrl-C stops all", run: runRun},
		"interrupt":  {summary: "deliver a simulated spot interruption notice to a node (kwok provider)", run: runInterrupt},
	}
}

// runVersion prints the build's version and commit (pkg/metrics.Version
// and Commit, set at build time with -ldflags -X).
func runVersion(_ []string, stdout, _ io.Writer) error {
	_, err := fmt.Fprintf(stdout, "karp %s (commit %s)\n", metrics.Version, metrics.Commit)
	return err
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "karp: a Kubernetes node autoscaler speaking the karpenter.sh/v1 API")
	fmt.Fprintln(w, "\nUsage: karp <command> [flags]\n\nCommands:")
	cmds := subcommands()
	names := make([]string, 0, len(cmds))
	for name := range cmds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-12s %s\n", name, cmds[name].summary)
	}
	fmt.Fprintln(w, "\nRun 'karp <command> -h' for a command's flags.")
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return 0
	}
	cmd, ok := subcommands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "karp: unknown command %q\n\n", args[0])
		usage(stderr)
		return 1
	}
	if err := cmd.run(args[1:], stdout, stderr); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			if ee.err != nil {
				fmt.Fprintf(stderr, "karp %s: %v\n", args[0], ee.err)
			}
			return ee.code
		}
		fmt.Fprintf(stderr, "karp %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
