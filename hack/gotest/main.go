// Command gotest runs the tests of a list of packages the way `go test
// -count=1` does, but links each package's test binary only when its
// inputs changed since the last run.
//
// `go test` compiles through the build cache but links every test binary
// again on each run: about 4.5 CPU-seconds for one of karp's (the
// controller-runtime, client-go and AWS SDK packages they carry), so about
// 540 CPU-seconds of a `make test` that links some 126 of them, the same
// binaries as the run before whenever the commit changed no Go code they
// contain. gotest keys each test binary by the content IDs of every package
// linked into it (as `go list -export` reports them, after compiling through
// the build cache) and the flags that shape the link, keeps the newest one
// per package in a cache directory, and runs it; a package whose binary is
// not there is linked with `go test -c`, so what runs is what `go test`
// would have built.
//
// Output follows `go test`'s: "ok <package> <time>" for a package that
// passed, its whole output and "FAIL <package> <time>" for one that failed
// (and with -v every package's output), "? <package> [no test files]" for
// one without tests, in the order given. Packages start -p at a time, in
// the order given, or with -longest-first by the wall time each took when
// it last ran here (recorded in the cache directory on every run, see
// startOrder); a package with no recorded time then starts before those
// with one, in the order given. The e2e tier's packages run four at once
// and take from seconds to nine minutes, mostly waiting on timers: started
// in a fixed order, a long one left for last kept the tier waiting on it
// alone.
//
// Usage:
//
//	go run ./hack/gotest [-p n] [-timeout d] [-race] [-ldflags flags] [-v] [-run regexp] [-longest-first] [-cache dir] packages...
//
// The cache directory is $KARP_TEST_BIN_CACHE, else karp/testbin under the
// user's cache directory (~/.cache). It holds one binary per package and
// mode (with or without -race), up to about 50 MB each.
package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cacheFormat changes whenever the key's recipe or the cache's layout does,
// so a binary cached under another recipe is never taken for a match.
const cacheFormat = "karp-testbin 2"

// killGrace is how long a test binary may run past its own -test.timeout
// (after which it panics with every goroutine's stack) before gotest kills
// it, as `go test` does.
const killGrace = time.Minute

type options struct {
	parallel int
	timeout  time.Duration
	race     bool
	ldflags  string
	verbose  bool
	run      string
	cacheDir string
	// longestFirst starts the packages by their recorded run times.
	longestFirst bool
}

func main() {
	opts := options{}
	flag.IntVar(&opts.parallel, "p", 2, "test binaries linked and run at once")
	flag.DurationVar(&opts.timeout, "timeout", 10*time.Minute, "each package's -test.timeout")
	flag.BoolVar(&opts.race, "race", false, "build with the race detector")
	flag.StringVar(&opts.ldflags, "ldflags", "", "linker flags of the test binaries")
	flag.BoolVar(&opts.verbose, "v", false, "run with -test.v and print every package's output")
	flag.StringVar(&opts.run, "run", "", "run only the tests matching this regular expression")
	flag.BoolVar(&opts.longestFirst, "longest-first", false, "start the packages that took longest when they last ran here first")
	flag.StringVar(&opts.cacheDir, "cache", "", "directory of the cached test binaries (default $KARP_TEST_BIN_CACHE, else ~/.cache/karp/testbin)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "gotest: no packages given")
		os.Exit(2)
	}
	if opts.parallel < 1 {
		opts.parallel = 1
	}
	if opts.cacheDir == "" {
		opts.cacheDir = defaultCacheDir()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := run(ctx, opts, flag.Args(), os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gotest:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func defaultCacheDir() string {
	if dir := os.Getenv("KARP_TEST_BIN_CACHE"); dir != "" {
		return dir
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "karp", "testbin")
	}
	return filepath.Join(os.TempDir(), "karp-testbin")
}

// testPackage is one package of the list: where it is, whether it has tests,
// and the key of its test binary.
type testPackage struct {
	ImportPath   string
	Dir          string
	TestGoFiles  []string
	XTestGoFiles []string

	key string
}

func (p *testPackage) hasTests() bool { return len(p.TestGoFiles)+len(p.XTestGoFiles) > 0 }

// result is what running one package's tests printed and how it ended.
type result struct {
	output  []byte
	passed  bool
	elapsed time.Duration
	// cpu is the user and system time of the test binary and of every
	// process it started and waited for (an API server, etcd, a
	// controller), as wait4 reports it.
	cpu time.Duration
	// linked: its test binary was linked by this run; cached: taken from
	// the cache.
	linked, cached bool
	// ran: the test binary ran (to its end or its timeout), so elapsed is
	// the package's run time.
	ran bool
}

// startOrder returns the indices of pkgs in the order to start them: as
// given, or with longestFirst those with no recorded run time first, in
// the order given, then the others from the longest recorded run down.
// Started longest first, -p at a time, packages that mostly wait end close
// together; in a fixed order, the tier waited on whichever long one
// happened to come last. (Packages that keep a core busy, as the
// integration tier's do, gain nothing from it: started together, they
// only slowed each other and what ran beside them.)
func startOrder(opts options, pkgs []*testPackage) []int {
	took := make([]time.Duration, len(pkgs))
	order := make([]int, len(pkgs))
	for i := range pkgs {
		order[i] = i
	}
	if !opts.longestFirst {
		return order
	}
	for i, p := range pkgs {
		took[i] = -1
		if b, err := os.ReadFile(durationFile(opts, p)); err == nil {
			if d, err := time.ParseDuration(strings.TrimSpace(string(b))); err == nil {
				took[i] = d
			}
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ua, ub := took[a] < 0, took[b] < 0
		switch {
		case ua && ub:
			return 0
		case ua:
			return -1
		case ub:
			return 1
		}
		return cmp.Compare(took[b], took[a])
	})
	return order
}

// durationFile holds how long the package's tests last ran, in the cache
// directory beside its binaries (one file a package: the tiers' gotests
// run at once and never write the same one).
func durationFile(opts options, p *testPackage) string {
	return filepath.Join(opts.cacheDir, "times", slotName(p.ImportPath, opts.race))
}

// recordDuration keeps how long the package's tests ran, for the next
// run's start order (best effort: a lost record only costs the order).
// A run of some tests only (-run) says nothing of the whole package's.
func recordDuration(opts options, p *testPackage, elapsed time.Duration) {
	if opts.run != "" {
		return
	}
	file := durationFile(opts, p)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return
	}
	tmp := fmt.Sprintf("%s.tmp-%d", file, os.Getpid())
	if err := os.WriteFile(tmp, []byte(elapsed.Round(time.Millisecond).String()+"\n"), 0o644); err != nil {
		return
	}
	if err := os.Rename(tmp, file); err != nil {
		_ = os.Remove(tmp)
	}
}

func run(ctx context.Context, opts options, patterns []string, out io.Writer) (bool, error) {
	pkgs, err := listPackages(ctx, opts, patterns)
	if err != nil {
		return false, err
	}
	if err := keyPackages(ctx, opts, pkgs); err != nil {
		return false, err
	}
	if err := os.MkdirAll(opts.cacheDir, 0o755); err != nil {
		return false, err
	}
	removeStaleRunDirs(opts.cacheDir)
	runDir, err := os.MkdirTemp(opts.cacheDir, "run-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(runDir)

	results := make([]chan result, len(pkgs))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range opts.parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				r := testOne(ctx, opts, runDir, pkgs[i], i)
				if r.ran && ctx.Err() == nil {
					recordDuration(opts, pkgs[i], r.elapsed)
				}
				results[i] <- r
			}
		}()
	}
	go func() {
		defer close(work)
		for _, i := range startOrder(opts, pkgs) {
			if !pkgs[i].hasTests() {
				results[i] <- result{passed: true}
				continue
			}
			select {
			case work <- i:
			case <-ctx.Done():
				results[i] <- result{output: []byte("gotest: interrupted before it started\n")}
			}
		}
	}()

	allPassed := true
	linked, reused := 0, 0
	var costs []packageCost
	for i, p := range pkgs {
		r := <-results[i]
		if p.hasTests() {
			costs = append(costs, packageCost{name: p.ImportPath, cpu: r.cpu})
		}
		// One write a package, so a block never interleaves with what
		// another process writes to the same log.
		var block bytes.Buffer
		switch {
		case !p.hasTests():
			fmt.Fprintf(&block, "?   \t%s\t[no test files]\n", p.ImportPath)
		case r.passed:
			if opts.verbose {
				block.Write(r.output)
			}
			fmt.Fprintf(&block, "ok  \t%s\t%.3fs\n", p.ImportPath, r.elapsed.Seconds())
		default:
			allPassed = false
			block.Write(r.output)
			fmt.Fprintf(&block, "FAIL\t%s\t%.3fs\n", p.ImportPath, r.elapsed.Seconds())
		}
		if r.linked {
			linked++
		}
		if r.cached {
			reused++
		}
		if _, err := out.Write(block.Bytes()); err != nil {
			return false, err
		}
	}
	wg.Wait()
	fmt.Fprintf(out, "gotest: %d test binaries linked, %d taken from %s\n", linked, reused, opts.cacheDir)
	if line := cpuSummary(costs, topCosts); line != "" {
		fmt.Fprintln(out, line)
	}
	if !allPassed {
		fmt.Fprintln(out, "FAIL")
	}
	return allPassed, nil
}

// packageCost is the CPU one package's test binary used.
type packageCost struct {
	name string
	cpu  time.Duration
}

// topCosts is how many packages the CPU summary names.
const topCosts = 8

// cpuSummary is one line with the packages' CPU time in all and the n
// packages that used most of it: where to look to make a tier cheaper.
func cpuSummary(costs []packageCost, n int) string {
	if len(costs) == 0 {
		return ""
	}
	var total time.Duration
	for _, c := range costs {
		total += c.cpu
	}
	sorted := slices.Clone(costs)
	slices.SortStableFunc(sorted, func(a, b packageCost) int { return cmp.Compare(b.cpu, a.cpu) })
	parts := make([]string, 0, n)
	for _, c := range sorted[:min(n, len(sorted))] {
		parts = append(parts, fmt.Sprintf("%s=%.1fs", path.Base(c.name), c.cpu.Seconds()))
	}
	return fmt.Sprintf("gotest: %.0f CPU-s in test binaries and what they ran; most: %s", total.Seconds(), strings.Join(parts, " "))
}

// staleRunAge is the age past which a run directory is taken to be left by
// a run that was killed, not one still running.
const staleRunAge = 24 * time.Hour

// removeStaleRunDirs removes the run directories (hard links to the
// binaries a run used) that killed runs left behind.
func removeStaleRunDirs(cacheDir string) {
	dirs, _ := filepath.Glob(filepath.Join(cacheDir, "run-*"))
	for _, dir := range dirs {
		if info, err := os.Stat(dir); err == nil && time.Since(info.ModTime()) > staleRunAge {
			_ = os.RemoveAll(dir)
		}
	}
}

// listPackages resolves the patterns to packages, in the order given.
func listPackages(ctx context.Context, opts options, patterns []string) ([]*testPackage, error) {
	args := []string{"list", "-json=ImportPath,Dir,TestGoFiles,XTestGoFiles"}
	if opts.race {
		args = append(args, "-race")
	}
	stdout, err := goCommand(ctx, append(args, patterns...)...)
	if err != nil {
		return nil, err
	}
	var pkgs []*testPackage
	dec := json.NewDecoder(bytes.NewReader(stdout))
	for {
		p := &testPackage{}
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading go list: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// keyPackages compiles every package the test binaries contain (through the
// build cache, as `go test` would) and keys each package's test binary by
// the content ID of every package linked into it: any change to the
// compiled code of any of them, however deep, gives a new key, and two
// checkouts of the same code share the binaries. The link's own inputs (the Go
// toolchain, its environment, the linker flags, the race detector) are part
// of the key too.
func keyPackages(ctx context.Context, opts options, pkgs []*testPackage) error {
	var roots []string
	for _, p := range pkgs {
		if p.hasTests() {
			roots = append(roots, p.ImportPath)
		}
	}
	if len(roots) == 0 {
		return nil
	}
	args := []string{"list", "-test", "-deps", "-export", "-json=ImportPath,BuildID,Deps"}
	if opts.race {
		args = append(args, "-race")
	}
	stdout, err := goCommand(ctx, append(args, roots...)...)
	if err != nil {
		return err
	}
	buildIDs := map[string]string{}
	deps := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(stdout))
	for {
		var entry struct {
			ImportPath string
			BuildID    string
			Deps       []string
		}
		if err := dec.Decode(&entry); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("reading go list -export: %w", err)
		}
		buildIDs[entry.ImportPath] = entry.BuildID
		deps[entry.ImportPath] = entry.Deps
	}
	env, err := goCommand(ctx, "env", "GOVERSION", "GOOS", "GOARCH", "GOAMD64", "GOARM64", "CGO_ENABLED", "CC", "GOFLAGS", "GOEXPERIMENT")
	if err != nil {
		return err
	}
	for _, p := range pkgs {
		if !p.hasTests() {
			continue
		}
		main := p.ImportPath + ".test"
		if _, found := buildIDs[main]; !found {
			return fmt.Errorf("go list -export reported no test main for %s", p.ImportPath)
		}
		h := sha256.New()
		fmt.Fprintf(h, "%s\nrace=%v\nldflags=%q\n%s\n", cacheFormat, opts.race, opts.ldflags, env)
		linked := append([]string{main}, deps[main]...)
		sort.Strings(linked)
		for _, name := range linked {
			fmt.Fprintf(h, "%s %s\n", name, contentID(buildIDs[name]))
		}
		p.key = hex.EncodeToString(h.Sum(nil))
	}
	return nil
}

// contentID is the part of a build ID ("actionID/contentID") that hashes
// the compiled package itself: what the linker reads. The action ID hashes
// the compile's inputs, and the generated test main's differs between two
// checkouts of the same commit.
func contentID(buildID string) string {
	if i := strings.LastIndexByte(buildID, '/'); i >= 0 {
		return buildID[i+1:]
	}
	return buildID
}

// testOne gets the package's test binary (from the cache, or linked now)
// and runs it in the package's directory.
func testOne(ctx context.Context, opts options, runDir string, p *testPackage, index int) result {
	start := time.Now()
	// Named as go test names it (a test may read its own name), in a
	// directory of its own.
	dir := filepath.Join(runDir, strconv.Itoa(index))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return result{output: []byte(err.Error() + "\n")}
	}
	defer os.RemoveAll(dir)
	binary := filepath.Join(dir, filepath.Base(p.ImportPath)+".test")
	linked, err := fetchOrLink(ctx, opts, p, binary)
	if err != nil {
		return result{output: []byte(err.Error() + "\n"), linked: linked, elapsed: time.Since(start)}
	}

	args := []string{"-test.paniconexit0", "-test.timeout=" + opts.timeout.String()}
	if opts.verbose {
		args = append(args, "-test.v=true")
	}
	if opts.run != "" {
		args = append(args, "-test.run="+opts.run)
	}
	runCtx, cancel := context.WithTimeout(ctx, opts.timeout+killGrace)
	defer cancel()
	cmd := exec.CommandContext(runCtx, binary, args...)
	cmd.Dir = p.Dir
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	// A process the tests started and left behind keeps the output pipe
	// open; the package's result does not wait for it.
	cmd.WaitDelay = 10 * time.Second
	var output bytes.Buffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	start = time.Now()
	err = cmd.Run()
	elapsed := time.Since(start)
	if err != nil && !bytes.HasSuffix(output.Bytes(), []byte("\n")) && output.Len() > 0 {
		output.WriteByte('\n')
	}
	if err != nil && runCtx.Err() != nil && ctx.Err() == nil {
		fmt.Fprintf(&output, "*** Test killed with quit: ran too long (%s).\n", opts.timeout+killGrace)
	} else if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			fmt.Fprintf(&output, "gotest: %v\n", err)
		}
	}
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	return result{output: output.Bytes(), passed: err == nil, elapsed: elapsed, cpu: cpu, linked: linked, cached: !linked, ran: true}
}

// fetchOrLink puts the package's test binary at path: a hard link to the
// cached binary of the same key, else one linked now with `go test -c`
// (and then cached, replacing the package's previous one).
func fetchOrLink(ctx context.Context, opts options, p *testPackage, path string) (linked bool, err error) {
	slot := filepath.Join(opts.cacheDir, slotName(p.ImportPath, opts.race))
	cached := filepath.Join(slot, p.key)
	if err := os.Link(cached, path); err == nil {
		now := time.Now()
		_ = os.Chtimes(cached, now, now)
		return false, nil
	}
	args := []string{"test", "-c", "-o", path, "-vet=off"}
	if opts.race {
		args = append(args, "-race")
	}
	if opts.ldflags != "" {
		args = append(args, "-ldflags="+opts.ldflags)
	}
	if _, err := goCommand(ctx, append(args, p.ImportPath)...); err != nil {
		return true, fmt.Errorf("%w\nFAIL\t%s [build failed]", err, p.ImportPath)
	}
	storeInCache(slot, p.key, path)
	return true, nil
}

// storeInCache makes the binary at path the package's cached one: linked in
// under a temporary name and renamed, so another run never sees half of it,
// then the package's older binaries are removed. A failure only costs the
// next run a link.
func storeInCache(slot, key, path string) {
	if err := os.MkdirAll(slot, 0o755); err != nil {
		return
	}
	tmp := filepath.Join(slot, fmt.Sprintf(".tmp-%d-%s", os.Getpid(), key))
	if err := os.Link(path, tmp); err != nil {
		if err := copyFile(path, tmp); err != nil {
			_ = os.Remove(tmp)
			return
		}
	}
	if err := os.Rename(tmp, filepath.Join(slot, key)); err != nil {
		_ = os.Remove(tmp)
		return
	}
	entries, err := os.ReadDir(slot)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Name() != key && !strings.HasPrefix(e.Name(), ".tmp-") {
			_ = os.Remove(filepath.Join(slot, e.Name()))
		}
	}
}

// slotName is the cache directory of one package's binary in one mode.
func slotName(importPath string, race bool) string {
	name := importPath
	if race {
		name += " race"
	}
	sum := sha256.Sum256([]byte(name))
	return filepath.Base(importPath) + "-" + hex.EncodeToString(sum[:8])
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	outFile, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(outFile, in); err != nil {
		outFile.Close()
		return err
	}
	return outFile.Close()
}

// goCommand runs the go command and returns its standard output; on failure
// the error carries its standard error.
func goCommand(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, goBinary(), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

func goBinary() string {
	if goBin := os.Getenv("GO"); goBin != "" {
		return goBin
	}
	return "go"
}
