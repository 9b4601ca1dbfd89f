package framework

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRecordDurationAppendsOneLineATest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "times.tsv")
	t.Setenv(TimesEnv, path)
	t.Run("first", func(t *testing.T) { recordDuration(t, time.Now().Add(-90*time.Second)) })
	t.Run("second", func(t *testing.T) { recordDuration(t, time.Now()) })
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want one a test: %q", len(lines), raw)
	}
	fields := strings.Split(lines[0], "\t")
	if len(fields) != 4 || !strings.HasPrefix(fields[0], "90.") || fields[2] != t.Name()+"/first" || fields[3] != "PASS" {
		t.Errorf("first line %q, want 90.x seconds, the package, %s/first, PASS", lines[0], t.Name())
	}
}

func TestRecordPackageAddsItsWallTimeAndCPU(t *testing.T) {
	path := filepath.Join(t.TempDir(), "times.tsv")
	t.Setenv(TimesEnv, path)
	recordPackage(time.Now().Add(-5 * time.Second))
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\t")
	if len(fields) != 4 || !strings.HasPrefix(fields[0], "5.") || fields[1] != packageName() || fields[2] != "(package)" ||
		!strings.HasPrefix(fields[3], "cpu=") || !strings.HasSuffix(fields[3], "s") {
		t.Errorf("package line %q, want 5.x seconds, %s, (package), cpu=Ns", raw, packageName())
	}
}
