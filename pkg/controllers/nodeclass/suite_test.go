package nodeclass_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/karp-autoscaler/karp/pkg/operator/operatortest"
)

var h *operatortest.Harness

func TestMain(m *testing.M) {
	var err error
	h, err = operatortest.Start(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := h.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}
