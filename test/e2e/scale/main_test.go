package scale

import (
	"fmt"
	"os"
	"testing"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// scaleEnv turns the suite on. Without it no cluster is started and the
// test says how to run it: it launches hundreds of nodes and its figures
// only mean something on an otherwise idle machine.
const scaleEnv = "KARP_SCALE"

func TestMain(m *testing.M) {
	if os.Getenv(scaleEnv) == "" {
		os.Exit(m.Run())
	}
	fmt.Fprintf(os.Stderr, "scale: %s=%s pods\n", podsEnv, os.Getenv(podsEnv))
	framework.Main(m)
}
