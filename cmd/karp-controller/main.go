// Command karp-controller is the karp controller alone: what `karp
// controller` runs, without the other subcommands' dependencies (`karp
// simulate`'s offline CRD validation and its CEL engine, the live view).
// It is the binary to deploy: the smaller program keeps about 6 MB less
// of its code resident and allocates less at start-up.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/karp-autoscaler/karp/pkg/operator"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := operator.Main(ctx, "karp-controller", os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var usage *operator.UsageError
	switch {
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "karp-controller: %v\n", usage.Err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintf(os.Stderr, "karp-controller: %v\n", err)
		os.Exit(1)
	}
}
