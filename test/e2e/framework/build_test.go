package framework

import (
	"os"
	"path/filepath"
	"testing"
)

// RemoveBuilt removes what Build linked into a temporary directory, and
// never a prebuilt binary: the prebuilt directory is the repository's bin/,
// which holds the control plane too.
func TestRemoveBuiltLeavesPrebuiltBinaries(t *testing.T) {
	pre := t.TempDir()
	prebuilt := filepath.Join(pre, "karp-controller")
	if err := os.WriteFile(prebuilt, []byte("bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(PrebuiltEnv, pre)
	got, err := Build("github.com/karp-autoscaler/karp/cmd/karp-controller", "karp-controller")
	if err != nil || got != prebuilt {
		t.Fatalf("Build = %q, %v; want the prebuilt %q", got, err, prebuilt)
	}
	RemoveBuilt(got)
	if _, err := os.Stat(prebuilt); err != nil {
		t.Errorf("RemoveBuilt removed the prebuilt binary: %v", err)
	}

	tmp, err := os.MkdirTemp("", "karp-e2e-bin-")
	if err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(tmp, "karp")
	if err := os.WriteFile(linked, []byte("bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	RemoveBuilt(linked)
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("RemoveBuilt left the temporary build directory %s: %v", tmp, err)
	}
}
