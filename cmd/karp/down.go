package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
)

// runDown stops the local cluster recorded in --dir, started by `karp up`
// in this or another shell, and waits until none of its processes runs.
func runDown(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("karp down", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", localcluster.DefaultDir(), "cluster directory given to `karp up`")
	grace := fs.Duration("timeout", 30*time.Second, "how long to wait for a clean stop before killing what remains")
	if err := fs.Parse(args); err != nil {
		return err
	}
	err := localcluster.Down(context.Background(), *dir, *grace)
	if errors.Is(err, localcluster.ErrNotRunning) {
		fmt.Fprintf(stdout, "no local cluster running in %s\n", *dir)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stopped the local cluster in %s\n", *dir)
	return nil
}
