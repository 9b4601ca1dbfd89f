package repo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestRootFrom(t *testing.T) {
	top := t.TempDir()
	karp := filepath.Join(top, "karp")
	nested := filepath.Join(karp, "pkg", "a", "b")
	other := filepath.Join(karp, "hack", "tools")
	for _, dir := range []string{nested, other} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(karp, "go.mod"), "module "+Module+"\n\ngo 1.26.0\n")
	// A nested module of another path (as hack/tools is) is walked past.
	write(filepath.Join(other, "go.mod"), "module "+Module+"/hack/tools\n")

	for name, tc := range map[string]struct {
		from, want string
		wantErr    error
	}{
		"the root itself":           {from: karp, want: karp},
		"a package below the root":  {from: nested, want: karp},
		"inside a nested module":    {from: other, want: karp},
		"outside any karp checkout": {from: top, wantErr: ErrNotFound},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := RootFrom(tc.from)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("RootFrom(%s) error = %v, want %v", tc.from, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("RootFrom(%s) = %q, want %q", tc.from, got, tc.want)
			}
		})
	}
}

func TestRootFindsThisRepository(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "pkg", "repo", "repo.go")); err != nil {
		t.Errorf("Root() = %s, which does not hold pkg/repo/repo.go: %v", root, err)
	}
}
