package operator

import (
	"context"
	"errors"
	"flag"
	"io"
	"runtime/debug"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karp-autoscaler/karp/pkg/operator/options"
)

// UsageError is an error in the command-line flags (callers exit 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Main runs the controller from its command-line arguments, as both
// `karp controller` and the karp-controller binary do: flags → Options →
// logger → Run until ctx ends. -h prints the flags and returns nil.
func Main(ctx context.Context, name string, args []string, stderr io.Writer, commit string) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts, err := options.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
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
	return Run(log.IntoContext(ctx, logger.WithValues("commit", commit)), opts)
}
