package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/controllers/interruption"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

func TestInterruptAnnotatesTheNodeWithTheReclaimTime(t *testing.T) {
	env := environment.New(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := writeKubeconfig(env.Config, kubeconfig); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "spot-1"}}
	if err := env.Client.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}

	before := time.Now().Truncate(time.Second)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"interrupt", "--kubeconfig", kubeconfig, "--notice", "90s", "spot-1"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	raw := node.Annotations[interruption.NoticeAnnotationKey]
	reclaimAt, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		t.Fatalf("annotation %q: %v", raw, err)
	}
	// The notice is 90s from when the command ran.
	if lead := reclaimAt.Sub(before); lead < 90*time.Second {
		t.Errorf("reclaim time %s is less than the 90s notice after the command started", raw)
	}
	if !strings.Contains(stdout.String(), raw) {
		t.Errorf("stdout %q does not name the reclaim time %s", stdout.String(), raw)
	}

	// An unknown node is an error naming it.
	stderr.Reset()
	if code := run([]string{"interrupt", "--kubeconfig", kubeconfig, "missing"}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "missing") {
		t.Errorf("unknown node: exit %d, stderr %q", code, stderr.String())
	}
	// Exactly one node is required.
	if code := run([]string{"interrupt", "--kubeconfig", kubeconfig}, &stdout, &stderr); code != 2 {
		t.Errorf("no node: exit %d, want 2", code)
	}
}
