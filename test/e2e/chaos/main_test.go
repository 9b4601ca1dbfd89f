package chaos

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// seed drives every random choice of the run: which faults, in which
// phase, at what moment. KARP_CHAOS_SEED replays a run; otherwise it is
// the start time.
var seed int64

// soak is KARP_CHAOS_SOAK=1: more rounds of the phases and more faults.
var soak bool

func TestMain(m *testing.M) {
	seed = time.Now().UnixNano()
	if s := os.Getenv("KARP_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "chaos: KARP_CHAOS_SEED=%q is not an integer: %v\n", s, err)
			os.Exit(2)
		}
		seed = v
	}
	soak = os.Getenv("KARP_CHAOS_SOAK") == "1"
	fmt.Fprintf(os.Stderr, "chaos: seed %d (replay with KARP_CHAOS_SEED=%d)\n", seed, seed)
	code := framework.Run(m)
	fmt.Fprintf(os.Stderr, "chaos: seed %d\n", seed)
	os.Exit(code)
}
