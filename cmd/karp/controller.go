package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/karp-autoscaler/karp/pkg/operator"
)

// runController is `karp controller`, the same controller as the
// karp-controller binary (see cmd/karp-controller).
func runController(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := operator.Main(ctx, "karp controller", args, stdout, stderr)
	if usage := (*operator.UsageError)(nil); errors.As(err, &usage) {
		return &exitError{code: 2, err: usage.Err}
	}
	return err
}
