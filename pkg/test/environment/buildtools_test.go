package environment_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/karp-autoscaler/karp/pkg/repo"
)

// fakeGo is a go command for hack/build-tools.sh: `version` is the real
// one's (part of the key), and `build` appends a line to $FAKE_GO_BUILDS and
// writes, for each package named, an executable that exits 0 into the -o
// directory, so the script's check that each binary runs passes.
const fakeGo = `#!/bin/sh
case "$1" in
version) exec "$REAL_GO" version ;;
build)
  echo build >>"$FAKE_GO_BUILDS"
  out="" prev=""
  for a in "$@"; do
    [ "$prev" = "-o" ] && out="$a"
    prev="$a"
  done
  shift
  for a in "$@"; do
    case "$a" in -*|"$out") continue ;; esac
    name=$(basename "$a")
    printf '#!/bin/sh\nexit 0\n' >"$out/$name"
    chmod +x "$out/$name"
  done
  ;;
*) echo "fake go: $*" >&2; exit 2 ;;
esac
`

// buildTools runs hack/build-tools.sh with the fake go, binaries into
// binDir/k8s and the shared cache in cache; it returns its stderr and how
// many go builds all runs so far made.
func buildTools(t *testing.T, fake, builds, binDir, cache string) (string, int) {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(root, "hack", "build-tools.sh"))
	cmd.Env = append(os.Environ(), "GO="+fake, "REAL_GO="+realGo, "FAKE_GO_BUILDS="+builds,
		"KARP_BIN_DIR="+binDir, "KARP_TOOLS_CACHE="+cache)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build-tools.sh: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(builds)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return stderr.String(), strings.Count(string(b), "build\n")
}

// TestBuildToolsSharesItsBinariesAcrossCheckouts: the first checkout builds
// the control plane binaries and leaves them in the shared cache; a second
// checkout (another bin directory) takes them from there, as hard links,
// without building; a cached set that does not run is built again.
func TestBuildToolsSharesItsBinariesAcrossCheckouts(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "go")
	if err := os.WriteFile(fake, []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	builds := filepath.Join(dir, "builds")
	cache := filepath.Join(dir, "cache")
	binaries := []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubectl", "kwok"}

	first := filepath.Join(dir, "first")
	if _, n := buildTools(t, fake, builds, first, cache); n != 2 {
		t.Fatalf("first checkout: %d go builds, want 2 (the Kubernetes binaries, then kwok and etcd)", n)
	}
	keys, err := os.ReadDir(cache)
	if err != nil || len(keys) != 1 {
		t.Fatalf("cache after the first build: %v (%v), want one key", keys, err)
	}
	cached := filepath.Join(cache, keys[0].Name())

	second := filepath.Join(dir, "second")
	stderr, n := buildTools(t, fake, builds, second, cache)
	if n != 2 {
		t.Errorf("second checkout: %d go builds in all, want none new\n%s", n, stderr)
	}
	if !strings.Contains(stderr, "taken from") {
		t.Errorf("second checkout's log does not say the binaries came from the cache:\n%s", stderr)
	}
	for _, bin := range binaries {
		a, errA := os.Stat(filepath.Join(second, "k8s", bin))
		b, errB := os.Stat(filepath.Join(cached, bin))
		if errA != nil || errB != nil || !os.SameFile(a, b) {
			t.Errorf("%s in the second checkout is not the cached file (%v, %v)", bin, errA, errB)
		}
	}
	stamp, err := os.ReadFile(filepath.Join(second, "k8s", ".stamp"))
	if err != nil || "k8s-"+strings.TrimSpace(string(stamp)) != keys[0].Name() {
		t.Errorf("second checkout's stamp %q (%v), want the key of the cache's entry %s", stamp, err, keys[0].Name())
	}

	// A cached binary that no longer runs is not taken.
	if err := os.Remove(filepath.Join(cached, "kwok")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cached, "kwok"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	stderr, n = buildTools(t, fake, builds, filepath.Join(dir, "third"), cache)
	if n != 4 {
		t.Errorf("third checkout with a broken cache: %d go builds in all, want 2 new\n%s", n, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(cached, "kwok")); err != nil || strings.Contains(string(b), "exit 1") {
		t.Errorf("the broken cached kwok was not replaced (%v): %q", err, b)
	}
}
