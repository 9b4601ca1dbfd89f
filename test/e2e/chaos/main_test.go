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
// phase, at what moment.
var seed int64

// soak is KARP_CHAOS_SOAK=1: more rounds of the phases and more faults.
var soak bool

// short is the presubmit run, the one `make test` makes: the fixed
// presubmitSeed, one fault per phase, a shorter expireAfter and no expiry
// or daemonset phase (its expiring pool is emptied instead), so the run
// is the same every time and takes minutes less. KARP_CHAOS_SEED
// makes the full run: KARP_CHAOS_SEED=random with a new seed (what
// `make chaos` does), a number to replay one.
var short bool

// presubmitSeed is the short run's seed.
const presubmitSeed = 20261129

func TestMain(m *testing.M) {
	soak = os.Getenv("KARP_CHAOS_SOAK") == "1"
	switch s := os.Getenv("KARP_CHAOS_SEED"); {
	case s == "" && !soak:
		seed, short = presubmitSeed, true
	case s == "" || s == "random":
		seed = time.Now().UnixNano()
	default:
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "chaos: KARP_CHAOS_SEED=%q is neither an integer nor \"random\": %v\n", s, err)
			os.Exit(2)
		}
		seed = v
	}
	replay := fmt.Sprintf("KARP_CHAOS_SEED=%d", seed)
	if short {
		replay = "the same command: the presubmit run always takes this seed"
	}
	fmt.Fprintf(os.Stderr, "chaos: seed %d, %s run (replay with %s)\n", seed, runKind(), replay)
	code := framework.Run(m)
	fmt.Fprintf(os.Stderr, "chaos: seed %d, %s run\n", seed, runKind())
	os.Exit(code)
}

// runKind names the run for its log lines.
func runKind() string {
	switch {
	case soak:
		return "soak"
	case short:
		return "short presubmit"
	}
	return "full"
}
