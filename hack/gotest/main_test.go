package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// module writes a small module: lib (no tests) imported by uses, whose test
// reads a file from its own directory; alone, whose test fails; slow, whose
// test outlives a short timeout.
func module(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":              "module example.com/m\n\ngo 1.22\n",
		"lib/lib.go":          "package lib\n\nfunc Answer() int { return answer() }\n\nfunc answer() int { return 42 }\n",
		"uses/uses.go":        "package uses\n\nimport \"example.com/m/lib\"\n\nfunc Twice() int { return 2 * lib.Answer() }\n",
		"uses/uses_test.go":   "package uses\n\nimport (\n\t\"os\"\n\t\"path/filepath\"\n\t\"testing\"\n)\n\nfunc TestTwice(t *testing.T) {\n\tif _, err := os.Stat(\"testdata/here\"); err != nil {\n\t\tt.Fatal(err)\n\t}\n\tif name := filepath.Base(os.Args[0]); name != \"uses.test\" {\n\t\tt.Fatalf(\"binary named %s\", name)\n\t}\n\tt.Logf(\"twice is %d\", Twice())\n\tif Twice() != 84 {\n\t\tt.Fatalf(\"Twice() = %d\", Twice())\n\t}\n}\n",
		"uses/testdata/here":  "",
		"alone/alone.go":      "package alone\n",
		"alone/alone_test.go": "package alone\n\nimport \"testing\"\n\nfunc TestFails(t *testing.T) { t.Fatal(\"alone fails on purpose\") }\n",
		"slow/slow_test.go":   "package slow\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestSlow(t *testing.T) { time.Sleep(time.Minute) }\n",
		"notests/notests.go":  "package notests\n",
		"uses/other_test.go":  "package uses_test\n\nimport \"testing\"\n\nfunc TestExternal(t *testing.T) {}\n",
		"spin/spin_test.go":   spinTest,
	}
	fsys := fstest.MapFS{}
	for name, content := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(content), Mode: 0o644}
	}
	if err := os.CopyFS(dir, fsys); err != nil {
		t.Fatal(err)
	}
	return dir
}

// spinTest runs itself again as a child process that spends 600 ms of CPU,
// and waits for it: the child's time is the package's too.
const spinTest = `package spin

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestSpin(t *testing.T) {
	if os.Getenv("SPIN_CHILD") == "1" {
		for {
			var ru syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			if time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) >= 600*time.Millisecond {
				return
			}
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=TestSpin")
	cmd.Env = append(os.Environ(), "SPIN_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}
`

// runIn runs gotest's run in dir and returns whether it passed and what it
// printed.
func runIn(t *testing.T, dir string, opts options, patterns ...string) (bool, string) {
	t.Helper()
	t.Chdir(dir)
	var out bytes.Buffer
	ok, err := run(context.Background(), opts, patterns, &out)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return ok, out.String()
}

func mustMatch(t *testing.T, output, pattern string) {
	t.Helper()
	if !regexp.MustCompile(pattern).MatchString(output) {
		t.Errorf("output does not match %q:\n%s", pattern, output)
	}
}

func TestLinksOnlyWhatChangedAndReportsLikeGoTest(t *testing.T) {
	dir := module(t)
	opts := options{parallel: 2, timeout: time.Minute, ldflags: "-w", cacheDir: t.TempDir()}

	ok, out := runIn(t, dir, opts, "./uses", "./alone", "./notests")
	if ok {
		t.Errorf("run passed although alone's test fails:\n%s", out)
	}
	mustMatch(t, out, `(?m)^ok  \texample.com/m/uses\t[0-9.]+s$`)
	mustMatch(t, out, `alone fails on purpose`)
	mustMatch(t, out, `(?m)^FAIL\texample.com/m/alone\t[0-9.]+s$`)
	mustMatch(t, out, `(?m)^\?   \texample.com/m/notests\t\[no test files\]$`)
	mustMatch(t, out, `gotest: 2 test binaries linked, 0 taken from`)
	if strings.Contains(out, "twice is") {
		t.Errorf("a passing package's output is printed without -v:\n%s", out)
	}
	// The packages' lines come in the order given.
	if strings.Index(out, "example.com/m/uses") > strings.Index(out, "example.com/m/notests") {
		t.Errorf("packages out of order:\n%s", out)
	}

	_, out = runIn(t, dir, opts, "./uses", "./alone", "./notests")
	mustMatch(t, out, `gotest: 0 test binaries linked, 2 taken from`)
	mustMatch(t, out, `(?m)^ok  \texample.com/m/uses\t`)
	mustMatch(t, out, `(?m)^FAIL\texample.com/m/alone\t`)

	// Another checkout of the same code takes the same binaries (with
	// -trimpath, as make sets it; without it the code holds its paths),
	// though its revision differs.
	t.Setenv("GOFLAGS", "-trimpath")
	_, out = runIn(t, dir, opts, "./uses", "./alone")
	mustMatch(t, out, `gotest: 2 test binaries linked, 0 taken from`)
	other := module(t)
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "m"}} {
		// A repository: go stamps the revision into main packages, the
		// generated test mains among them.
		cmd := exec.Command("git", args...)
		cmd.Dir = other
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
	}
	_, out = runIn(t, other, opts, "./uses", "./alone")
	mustMatch(t, out, `gotest: 0 test binaries linked, 2 taken from`)

	// A change inside lib that leaves its API and its importer's compiled
	// code alone still changes what is linked into uses' test binary.
	libFile := filepath.Join(dir, "lib", "lib.go")
	if err := os.WriteFile(libFile, []byte("package lib\n\nfunc Answer() int { return answer() }\n\nfunc answer() int { return 41 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok, out = runIn(t, dir, opts, "./uses", "./alone")
	mustMatch(t, out, `gotest: 1 test binaries linked, 1 taken from`)
	mustMatch(t, out, `Twice\(\) = 82`)
	mustMatch(t, out, `(?m)^FAIL\texample.com/m/uses\t`)
	if ok {
		t.Errorf("run passed with a failing package")
	}

	// Another mode is another binary; the cache keeps one per package and mode.
	// The race detector needs cgo (make builds without it).
	cgo, hadCgo := os.LookupEnv("CGO_ENABLED")
	t.Setenv("CGO_ENABLED", "1")
	opts.race = true
	opts.verbose = true
	_, out = runIn(t, dir, opts, "./uses")
	mustMatch(t, out, `gotest: 1 test binaries linked, 0 taken from`)
	mustMatch(t, out, `=== RUN   TestTwice`)
	opts.race = false
	if hadCgo {
		t.Setenv("CGO_ENABLED", cgo)
	} else {
		os.Unsetenv("CGO_ENABLED")
	}
	_, out = runIn(t, dir, opts, "./uses")
	mustMatch(t, out, `gotest: 0 test binaries linked, 1 taken from`)
	slots, err := filepath.Glob(filepath.Join(opts.cacheDir, "uses-*", "*"))
	if err != nil || len(slots) != 2 {
		t.Errorf("cached binaries of uses: %v (%v), want one per mode", slots, err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(opts.cacheDir, "run-*")); len(leftovers) > 0 {
		t.Errorf("run directories left behind: %v", leftovers)
	}

	// A killed run's directory goes once it is a day old; a running one's
	// stays.
	killed, running := filepath.Join(opts.cacheDir, "run-killed"), filepath.Join(opts.cacheDir, "run-running")
	for _, dir := range []string{killed, running} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-25 * time.Hour)
	if err := os.Chtimes(killed, old, old); err != nil {
		t.Fatal(err)
	}
	runIn(t, dir, opts, "./notests")
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("a killed run's directory of a day ago is still there (%v)", err)
	}
	if _, err := os.Stat(running); err != nil {
		t.Errorf("a running run's directory was removed: %v", err)
	}
}

// TestReportsTheCPUOfEachPackageAndWhatItRan: the summary line counts the
// CPU of the processes a test binary started and waited for (an API
// server, etcd) as the package's, and names the costliest first.
func TestReportsTheCPUOfEachPackageAndWhatItRan(t *testing.T) {
	dir := module(t)
	opts := options{parallel: 2, timeout: time.Minute, ldflags: "-w", cacheDir: t.TempDir()}
	_, out := runIn(t, dir, opts, "./uses", "./spin")
	m := regexp.MustCompile(`(?m)^gotest: ([0-9]+) CPU-s in test binaries and what they ran; most: spin=([0-9.]+)s uses=([0-9.]+)s$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no CPU summary naming spin before uses:\n%s", out)
	}
	spin, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		t.Fatal(err)
	}
	if spin < 0.6 {
		t.Errorf("spin used %.1f CPU-s, want at least the 0.6 its child spent", spin)
	}
}

func TestTestTimeoutFailsThePackageWithStacks(t *testing.T) {
	dir := module(t)
	opts := options{parallel: 1, timeout: time.Second, cacheDir: t.TempDir(), run: "TestSlow"}
	ok, out := runIn(t, dir, opts, "./slow")
	if ok {
		t.Errorf("a test past its timeout passed:\n%s", out)
	}
	mustMatch(t, out, `panic: test timed out after 1s`)
	mustMatch(t, out, `(?m)^FAIL\texample.com/m/slow\t`)
}

func TestBuildFailureFailsThePackage(t *testing.T) {
	dir := module(t)
	if err := os.WriteFile(filepath.Join(dir, "alone", "broken_test.go"), []byte("package alone\n\nvar x int = \"no\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	var out bytes.Buffer
	ok, err := run(context.Background(), options{parallel: 1, timeout: time.Minute, cacheDir: t.TempDir()}, []string{"./alone"}, &out)
	if ok || err == nil {
		t.Fatalf("a package that does not compile: ok=%v err=%v\n%s", ok, err, out.String())
	}
	mustMatch(t, err.Error(), `cannot use "no"`)
}

// A run records how long each package's tests took, and the next run
// starts the longest first: with -p 1, a package that has no record yet
// first (it may be long), then the recorded ones from the longest down,
// whatever order they are given in; the report keeps the order given.
func TestStartsTheLongestPackageFirst(t *testing.T) {
	dir := module(t)
	opts := options{parallel: 1, timeout: time.Minute, ldflags: "-w", cacheDir: t.TempDir()}
	pkgs, err := func() ([]*testPackage, error) {
		t.Chdir(dir)
		return listPackages(context.Background(), opts, []string{"./uses", "./alone", "./spin", "./notests"})
	}()
	if err != nil {
		t.Fatal(err)
	}
	runIn(t, dir, opts, "./alone", "./notests")
	if _, err := os.Stat(durationFile(opts, pkgs[1])); err != nil {
		t.Fatalf("no run time recorded for %s: %v", pkgs[1].ImportPath, err)
	}
	if _, err := os.Stat(durationFile(opts, pkgs[3])); err == nil {
		t.Errorf("a run time recorded for %s, which has no tests", pkgs[3].ImportPath)
	}
	// A run of some tests only says nothing of the package's whole run.
	before, _ := os.ReadFile(durationFile(opts, pkgs[1]))
	opts.run = "TestFails"
	runIn(t, dir, opts, "./alone")
	opts.run = ""
	if after, _ := os.ReadFile(durationFile(opts, pkgs[1])); !bytes.Equal(before, after) {
		t.Errorf("a -run run replaced alone's record %q with %q", before, after)
	}
	// Made-up records, so the order does not hang on the machine's speed;
	// spin and notests have none.
	for i, took := range []string{"2s", "1m"} {
		if err := os.WriteFile(durationFile(opts, pkgs[i]), []byte(took+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	order := func() string {
		var got []string
		for _, i := range startOrder(opts, pkgs) {
			got = append(got, filepath.Base(pkgs[i].ImportPath))
		}
		return strings.Join(got, " ")
	}
	if got, want := order(), "uses alone spin notests"; got != want {
		t.Errorf("start order without -longest-first %s, want %s (as given)", got, want)
	}
	opts.longestFirst = true
	if got, want := order(), "spin notests alone uses"; got != want {
		t.Errorf("start order %s, want %s (unrecorded first as given, then the longest recorded)", got, want)
	}
}
