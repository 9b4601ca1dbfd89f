package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karp-autoscaler/karp/pkg/operator"
	"github.com/karp-autoscaler/karp/pkg/operator/options"
)

// runController is `karp controller`: flags → Options → operator.Run.
func runController(args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("karp controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts, err := options.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	logger, err := operator.NewLogger(opts)
	if err != nil {
		return err
	}
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	if opts.MemoryLimit > 0 {
		debug.SetMemoryLimit(opts.MemoryLimit / 10 * 9)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return operator.Run(log.IntoContext(ctx, logger.WithValues("commit", version)), opts)
}
