package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// kubeClient talks to the real kube-apiserver TestMain starts for the package.
var kubeClient client.Client

func TestMain(m *testing.M) {
	env, err := environment.Start(context.Background()) //nolint:forbidigo // TestMain owns the test binary's root context: its API server outlives every test
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the API server:", err)
		os.Exit(1)
	}
	kubeClient = env.Client
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the API server:", err)
	}
	os.Exit(code)
}
