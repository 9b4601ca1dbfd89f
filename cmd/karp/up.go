package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
)

// notifyFDEnv names the file descriptor on which a detached `karp up`
// reports readiness to the `karp up --detach` that started it.
const notifyFDEnv = "KARP_UP_NOTIFY_FD"

// upOptions are the flags of `karp up`.
type upOptions struct {
	dir     string
	binDir  string
	apply   []string
	timeout time.Duration
	detach  bool
}

// pathList is the repeatable --apply flag.
type pathList []string

func (s *pathList) String() string     { return strings.Join(*s, ",") }
func (s *pathList) Set(v string) error { *s = append(*s, v); return nil }

func parseUpFlags(args []string, stderr io.Writer) (upOptions, error) {
	opts := upOptions{}
	fs := flag.NewFlagSet("karp up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.dir, "dir", localcluster.DefaultDir(), "cluster directory (credentials, kubeconfig, logs, etcd data)")
	fs.StringVar(&opts.binDir, "bin-dir", localcluster.DefaultBinDir(), "directory holding etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kwok and kubectl")
	fs.Var((*pathList)(&opts.apply), "apply", "manifest file or directory to server-side apply once the cluster is ready (repeatable)")
	fs.DurationVar(&opts.timeout, "timeout", 3*time.Minute, "how long to wait for the cluster to become ready")
	fs.BoolVar(&opts.detach, "detach", false, "return once the cluster is ready and leave it running until `karp down`")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return opts, absPaths(&opts)
}

func absPaths(opts *upOptions) error {
	var err error
	if opts.dir, err = filepath.Abs(opts.dir); err != nil {
		return err
	}
	if opts.binDir, err = filepath.Abs(opts.binDir); err != nil {
		return err
	}
	for i := range opts.apply {
		if opts.apply[i], err = filepath.Abs(opts.apply[i]); err != nil {
			return err
		}
	}
	return nil
}

// runUp starts a local control plane. In the foreground it runs until
// Ctrl-C/SIGTERM or until a component dies; with --detach it starts itself
// in the background and returns once that cluster is ready.
func runUp(args []string, stdout, stderr io.Writer) error {
	opts, err := parseUpFlags(args, stderr)
	if err != nil {
		return err
	}
	if opts.detach {
		return upDetached(opts, stdout)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		Dir: opts.dir, BinDir: opts.binDir, Timeout: opts.timeout, Progress: stderr,
	})
	if err != nil {
		return err
	}
	if len(opts.apply) > 0 {
		if err := localcluster.Apply(ctx, cluster.Config, opts.apply, stdout); err != nil {
			return errors.Join(err, cluster.Stop())
		}
	}
	printReady(stdout, cluster.Kubeconfig, opts.binDir)
	notifyReady()
	if os.Getenv(notifyFDEnv) == "" {
		fmt.Fprintln(stdout, "Press Ctrl-C to stop the cluster.")
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(stderr, "stopping the local cluster")
		return cluster.Stop()
	case err := <-cluster.Died():
		return errors.Join(err, cluster.Stop())
	}
}

func printReady(w io.Writer, kubeconfig, binDir string) {
	fmt.Fprintf(w, "The local cluster is ready.\nkubeconfig: %s\n", kubeconfig)
	fmt.Fprintf(w, "Try: KUBECONFIG=%s %s get nodepools,nodeclaims,nodes\n", kubeconfig, filepath.Join(binDir, "kubectl"))
}

// notifyReady tells a waiting `karp up --detach` that the cluster is
// ready, when this process is its detached child.
func notifyReady() {
	fd, err := strconv.Atoi(os.Getenv(notifyFDEnv))
	if err != nil || fd < 3 {
		return
	}
	f := os.NewFile(uintptr(fd), "karp-up-notify")
	_, _ = f.WriteString("ready\n")
	_ = f.Close()
}

// upDetached starts `karp up` (without --detach) in a new session, its
// output in <dir>/karp-up.log, and waits for it to report ready. If the
// child exits first, the error carries the tail of its log.
func upDetached(opts upOptions, stdout io.Writer) error {
	// Check before touching the directory: the running cluster's
	// supervisor still writes to karp-up.log.
	if s, err := localcluster.ReadState(opts.dir); err == nil && len(s.Alive()) > 0 {
		return fmt.Errorf("a local cluster is already running in %s; run `karp down --dir %s` first", opts.dir, opts.dir)
	}
	if err := os.MkdirAll(opts.dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", opts.dir, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the karp executable: %w", err)
	}
	logPath := filepath.Join(opts.dir, "karp-up.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("creating %s: %w", logPath, err)
	}
	defer logFile.Close()
	readR, readW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("creating readiness pipe: %w", err)
	}
	defer readR.Close()
	args := []string{"up", "--dir", opts.dir, "--bin-dir", opts.binDir, "--timeout", opts.timeout.String()}
	for _, a := range opts.apply {
		args = append(args, "--apply", a)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.ExtraFiles = []*os.File{readW}
	cmd.Env = append(os.Environ(), notifyFDEnv+"=3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		_ = readW.Close()
		return fmt.Errorf("starting background karp up: %w", err)
	}
	_ = readW.Close()
	line, _ := bufio.NewReader(readR).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		waitErr := cmd.Wait()
		return fmt.Errorf("background karp up failed (%w); its log %s ends:\n%s", waitErr, logPath, tail(logPath, 40))
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	printReady(stdout, filepath.Join(opts.dir, "kubeconfig"), opts.binDir)
	fmt.Fprintf(stdout, "Running in the background (pid %d, log %s). Stop it with: karp down --dir %s\n", pid, logPath, opts.dir)
	return nil
}

func tail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
