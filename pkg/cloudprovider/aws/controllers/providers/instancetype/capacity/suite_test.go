package capacity_test

import (
	"testing"

	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

// h is a real kube-apiserver with karp's CRDs and a fake clock.
var h *operatortest.Harness

func TestMain(m *testing.M) { operatortest.Main(m, &h) }
