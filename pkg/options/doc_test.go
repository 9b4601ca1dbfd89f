package options_test

import (
	"flag"
	"os"
	"regexp"
	"testing"

	"github.com/karp-autoscaler/karp/pkg/options"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
)

// TestEveryFlagIsDocumented: docs/controller.md's flag table names every
// flag the controller registers, and no flag it does not.
func TestEveryFlagIsDocumented(t *testing.T) {
	raw, err := os.ReadFile(fixtures.Path(t, "docs", "controller.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	// A table row's first cell holds one flag or two separated by " / ".
	row := regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)`(?: / `--([a-z0-9-]+)`)? \\|")
	for _, m := range row.FindAllStringSubmatch(string(raw), -1) {
		for _, name := range m[1:] {
			if name != "" {
				documented[name] = true
			}
		}
	}

	fs := flag.NewFlagSet("karp-controller", flag.ContinueOnError)
	options.AddFlags(fs)
	registered := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { registered[f.Name] = true })

	for name := range registered {
		if !documented[name] {
			t.Errorf("--%s is not in docs/controller.md's flag table", name)
		}
	}
	for name := range documented {
		if !registered[name] {
			t.Errorf("docs/controller.md documents --%s, which the controller does not register", name)
		}
	}
}
