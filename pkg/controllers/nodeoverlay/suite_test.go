package nodeoverlay_test

import (
	"testing"

	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

var h *operatortest.Harness

func TestMain(m *testing.M) { operatortest.Main(m, &h) }
