package operator

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/options"
)

// UsageError is an error in the command-line flags (callers exit 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Main runs the controller from its command-line arguments, as both
// `karp controller` and the karp-controller binary do: flags → Options →
// logger → Run until ctx ends. -h prints the flags and --version the build
// (pkg/metrics.Version and Commit, set at build time) to stdout; both
// return nil.
func Main(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts, err := options.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if opts != nil && opts.Version {
		// Before validation: the version is printable whatever else is set.
		_, err := fmt.Fprintf(stdout, "%s %s (commit %s, %s)\n", name, metrics.Version, metrics.Commit, runtime.Version())
		return err
	}
	if err != nil {
		return &UsageError{Err: err}
	}
	logger, err := NewLogger(opts)
	if err != nil {
		return err
	}
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	if opts.MemoryLimit > 0 {
		debug.SetMemoryLimit(opts.MemoryLimit / 10 * 9)
	}
	return Run(log.IntoContext(ctx, logger.WithValues("version", metrics.Version, "commit", metrics.Commit)), opts)
}
