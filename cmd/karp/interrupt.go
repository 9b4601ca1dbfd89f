package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/controllers/interruption"
	"github.com/karp-autoscaler/karp/pkg/operator"
)

// runInterrupt delivers a simulated spot interruption notice to a node of
// the kwok provider: it annotates the Node with the time its instance will
// be reclaimed; the karp controller replaces the node before then.
func runInterrupt(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("karp interrupt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: karp interrupt [flags] NODE\n\nDeliver a simulated spot interruption notice to NODE (kwok provider).\n\nFlags:")
		fs.PrintDefaults()
	}
	kubeconfig := fs.String("kubeconfig", "", "path to a kubeconfig; empty uses $KUBECONFIG, then ~/.kube/config")
	notice := fs.Duration("notice", interruption.NoticePeriod, "how long before the instance is reclaimed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return &exitError{code: 2, err: errors.New("expected exactly one NODE")}
	}
	if *notice <= 0 {
		return fmt.Errorf("--notice must be positive, got %s", *notice)
	}
	cfg, err := operator.RestConfig(*kubeconfig)
	if err != nil {
		return err
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building client: %w", err)
	}
	node := fs.Arg(0)
	reclaimAt, err := interruptNode(context.Background(), clientset, node, time.Now().Add(*notice))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "node/%s interrupted: instance reclaimed at %s\n", node, reclaimAt)
	return nil
}

// interruptNode annotates the node with the reclaim time and returns it as
// written.
func interruptNode(ctx context.Context, clientset kubernetes.Interface, node string, reclaimAt time.Time) (string, error) {
	at := reclaimAt.UTC().Format(time.RFC3339)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{interruption.NoticeAnnotationKey: at}}})
	if err != nil {
		return "", err
	}
	if _, err := clientset.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("annotating node %s: %w", node, err)
	}
	return at, nil
}
