package expiration_test

import (
	"testing"

	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

// h is a real kube-apiserver with karp's CRDs, a cache with karp's field
// indexes and a fake clock.
var h *operatortest.Harness

func TestMain(m *testing.M) { operatortest.Main(m, &h) }
