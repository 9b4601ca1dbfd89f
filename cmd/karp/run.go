package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/view"
)

// runOptions are the flags of `karp run`.
type runOptions struct {
	up             upOptions
	instanceTypes  string
	showView       bool
	controllerArgs []string
	// cloudProvider is kwok (simulated nodes) or aws (the simulated AWS
	// account and its kubelets, in this process).
	cloudProvider string
	// clusterName and kubeletDelay configure the simulated AWS.
	clusterName  string
	kubeletDelay time.Duration
}

// Cloud providers `karp run` can run the controller with.
const (
	runProviderKWOK = "kwok"
	runProviderAWS  = "aws"
)

func parseRunFlags(args []string, stderr io.Writer) (runOptions, error) {
	opts := runOptions{}
	fs := flag.NewFlagSet("karp run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: karp run [flags] [-- karp controller flags]")
		fs.PrintDefaults()
	}
	fs.StringVar(&opts.up.dir, "dir", localcluster.DefaultDir(), "cluster directory (credentials, kubeconfig, logs, etcd data)")
	fs.StringVar(&opts.up.binDir, "bin-dir", localcluster.DefaultBinDir(), "directory holding etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kwok and kubectl")
	fs.Var((*pathList)(&opts.up.apply), "apply", "manifest file or directory to server-side apply once the controller runs (repeatable)")
	fs.DurationVar(&opts.up.timeout, "timeout", 3*time.Minute, "how long to wait for the cluster to become ready")
	fs.StringVar(&opts.instanceTypes, "instance-types-file-path", "", "kwok provider catalog for the controller and the view's prices; empty uses the embedded EC2 catalog")
	fs.BoolVar(&opts.showView, "view", true, "show the live view of nodes; false only prints where the logs are")
	fs.StringVar(&opts.cloudProvider, "cloud-provider", runProviderKWOK, "kwok: simulated nodes; aws: the AWS provider against a simulated AWS account (EC2, SSM, IAM, SQS, Pricing, EKS on loopback) whose instances register kwok-managed Nodes")
	fs.StringVar(&opts.clusterName, "cluster-name", defaultAWSClusterName, "with --cloud-provider=aws: the simulated EKS cluster's name (discovery tags, interruption queue)")
	fs.DurationVar(&opts.kubeletDelay, "kubelet-delay", 2*time.Second, "with --cloud-provider=aws: how long after launch an instance's Node registers")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	if opts.cloudProvider != runProviderKWOK && opts.cloudProvider != runProviderAWS {
		return opts, fmt.Errorf("--cloud-provider %q: want %s or %s", opts.cloudProvider, runProviderKWOK, runProviderAWS)
	}
	if opts.cloudProvider == runProviderAWS && opts.instanceTypes != "" {
		return opts, errors.New("--instance-types-file-path is for the kwok provider; the AWS provider reads instance types from (simulated) EC2")
	}
	opts.controllerArgs = fs.Args()
	if opts.instanceTypes != "" {
		abs, err := filepath.Abs(opts.instanceTypes)
		if err != nil {
			return opts, err
		}
		opts.instanceTypes = abs
	}
	return opts, absPaths(&opts.up)
}

// controllerCommandArgs are the controller flags `karp run` starts it
// with: leader election off (one replica), no listening ports (they could
// clash with other local processes), the provider's flags (for aws, the
// simulated account's), then the user's own flags.
func (o runOptions) controllerCommandArgs(kubeconfig string, providerArgs []string) []string {
	args := []string{"--kubeconfig=" + kubeconfig, "--disable-leader-election",
		"--metrics-port=0", "--health-probe-port=0"}
	if o.instanceTypes != "" {
		args = append(args, "--instance-types-file-path="+o.instanceTypes)
	}
	args = append(args, providerArgs...)
	return append(args, o.controllerArgs...)
}

// runRun is `karp run`: a local cluster, the karp controller with the kwok
// provider as a child process, the manifests applied, and the live view
// until Ctrl-C, which stops the controller and then the cluster.
func runRun(args []string, stdout, stderr io.Writer) error {
	opts, err := parseRunFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	types, err := kwok.LoadInstanceTypes(opts.instanceTypes, nil)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		Dir: opts.up.dir, BinDir: opts.up.binDir, Timeout: opts.up.timeout, Progress: stderr,
	})
	if err != nil {
		return err
	}
	err = runWithCluster(ctx, opts, cluster, view.NewPriceTable(types), stdout, stderr)
	fmt.Fprintln(stderr, "stopping the local cluster")
	return errors.Join(err, cluster.Stop())
}

func runWithCluster(ctx context.Context, opts runOptions, cluster *localcluster.Cluster, prices view.PriceTable, stdout, stderr io.Writer) error {
	logPath := filepath.Join(cluster.Dir, "logs", "karp-controller.log")
	var providerArgs, env []string
	var simulated *simulatedAWS
	if opts.cloudProvider == runProviderAWS {
		var err error
		if simulated, err = startSimulatedAWS(ctx, cluster, opts); err != nil {
			return fmt.Errorf("starting the simulated AWS: %w", err)
		}
		defer simulated.stop()
		providerArgs, env = simulated.sim.ControllerArgs(), simulated.sim.Env()
		fmt.Fprintf(stderr, "simulated AWS account for cluster %s on %s\n", simulated.sim.ClusterName(), simulated.sim.URL())
	}
	controller, err := startChild(opts.controllerCommandArgs(cluster.Kubeconfig, providerArgs), env, logPath)
	if err != nil {
		return err
	}
	defer controller.stop(stderr)
	if simulated != nil {
		if err := applyAWSDefaults(ctx, cluster, simulated.sim, stdout); err != nil {
			return err
		}
	}
	if len(opts.up.apply) > 0 {
		if err := localcluster.Apply(ctx, cluster.Config, opts.up.apply, stdout); err != nil {
			return err
		}
	}
	header := fmt.Sprintf("karp run: kubeconfig %s\ncontroller log %s; Ctrl-C stops everything", cluster.Kubeconfig, logPath)
	fmt.Fprintln(stdout, header)
	viewErr := make(chan error, 1)
	go func() {
		if !opts.showView {
			<-ctx.Done()
			viewErr <- nil
			return
		}
		cs, err := kubernetes.NewForConfig(cluster.Config)
		if err != nil {
			viewErr <- err
			return
		}
		dyn, err := dynamic.NewForConfig(cluster.Config)
		if err != nil {
			viewErr <- err
			return
		}
		viewErr <- view.Watch(ctx, cs, dyn, prices, header, stdout)
	}()
	select {
	case <-ctx.Done():
		return <-viewErr
	case err := <-viewErr:
		return err
	case err := <-controller.done:
		return fmt.Errorf("the karp controller exited (log %s): %w", logPath, err)
	case err := <-cluster.Died():
		return err
	}
}

// child is a process `karp run` started and must stop.
type child struct {
	cmd  *exec.Cmd
	done chan error
}

// controllerCommand is the program `karp run` starts as the controller:
// the karp-controller binary installed beside this one (make build puts
// both in bin/), which leaves out the other subcommands' code, else this
// binary's own `karp controller`.
func controllerCommand(exe string) (string, []string) {
	lean := filepath.Join(filepath.Dir(exe), "karp-controller")
	if info, err := os.Stat(lean); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0 {
		return lean, nil
	}
	return exe, []string{"controller"}
}

// startChild runs the karp controller with args and env added to this
// process's environment in its own process group, output appended to
// logPath; it dies with this process (Pdeathsig).
func startChild(args, env []string, logPath string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the karp executable: %w", err)
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the controller log: %w", err)
	}
	program, prefix := controllerCommand(exe)
	cmd := exec.Command(program, append(prefix, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting the karp controller: %w", err)
	}
	c := &child{cmd: cmd, done: make(chan error, 1)}
	go func() {
		c.done <- cmd.Wait()
		_ = logFile.Close()
	}()
	return c, nil
}

// childStopGrace is how long the controller gets to exit after SIGTERM.
const childStopGrace = 15 * time.Second

// stop sends SIGTERM, then SIGKILL after childStopGrace, and waits.
func (c *child) stop(stderr io.Writer) {
	if c.cmd.ProcessState != nil {
		return
	}
	fmt.Fprintln(stderr, "stopping the karp controller")
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done: //nolint:errcheck // stopped on purpose: the exit status is not a failure
	case <-time.After(childStopGrace):
		_ = c.cmd.Process.Kill()
		<-c.done //nolint:errcheck // killed on purpose: the exit status says only that
	}
}
