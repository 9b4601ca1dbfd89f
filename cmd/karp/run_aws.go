package main

import (
	"context"
	_ "embed"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test/awssim"
)

// This file is the one place product code imports the simulated AWS
// (pkg/test/awssim): `karp run --cloud-provider aws` is a local development
// environment that runs it on purpose. .golangci.yml's depguard rule
// no-test-kits-in-product exempts this file alone, so keep every use of the
// simulator here.

// defaultAWSClusterName is the simulated EKS cluster's name unless
// --cluster-name says otherwise.
const defaultAWSClusterName = awssim.DefaultClusterName

// awsDefaults is the EC2NodeClass and NodePool `karp run --cloud-provider
// aws` applies before the user's manifests: the getting-started ones, with
// the simulated cluster's name in place of CLUSTER_NAME.
//
//go:embed aws-defaults.yaml
var awsDefaults string

// awsDefaultsFor renders awsDefaults for the simulated cluster.
func awsDefaultsFor(sim *awssim.Sim) string {
	return strings.NewReplacer("CLUSTER_NAME", sim.ClusterName(), "NODE_ROLE", sim.RoleName()).Replace(awsDefaults)
}

// simulatedAWS is the Sim `karp run --cloud-provider aws` serves, with its
// kubelet running.
type simulatedAWS struct {
	sim  *awssim.Sim
	stop func()
}

// startSimulatedAWS builds the Sim for the local cluster (its Kubernetes
// version, its API server as the EKS endpoint), serves it on loopback and
// starts its kubelet, logging to logs/awssim-kubelet.log.
func startSimulatedAWS(ctx context.Context, cluster *localcluster.Cluster, opts runOptions) (*simulatedAWS, error) {
	disco, err := discovery.NewDiscoveryClientForConfig(cluster.Config)
	if err != nil {
		return nil, err
	}
	info, err := disco.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the API server's version: %w", err)
	}
	minor := strings.TrimSuffix(info.Minor, "+")
	sim, err := awssim.New(ctx, awssim.Options{
		ClusterName:       opts.clusterName,
		KubernetesVersion: info.Major + "." + minor,
		ClusterEndpoint:   cluster.Config.Host,
		CABundle:          base64.StdEncoding.EncodeToString(cluster.Config.CAData),
	})
	if err != nil {
		return nil, err
	}
	if _, err := sim.Serve(); err != nil {
		return nil, err
	}
	// The kubelets only write Nodes: client-go's scheme is enough.
	kubeClient, err := client.New(cluster.Config, client.Options{})
	if err != nil {
		sim.Close()
		return nil, err
	}
	logFile, err := os.OpenFile(filepath.Join(cluster.Dir, "logs", "awssim-kubelet.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		sim.Close()
		return nil, err
	}
	logger := funcr.NewJSON(func(obj string) { fmt.Fprintln(logFile, obj) }, funcr.Options{})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	kubelet := sim.NewKubelet(kubeClient, awssim.KubeletOptions{RegistrationDelay: opts.kubeletDelay})
	go func() {
		defer close(done)
		_ = kubelet.Run(log.IntoContext(ctx, logger))
	}()
	return &simulatedAWS{sim: sim, stop: func() { cancel(); <-done; sim.Close(); _ = logFile.Close() }}, nil
}

// applyAWSDefaults writes the default EC2NodeClass and NodePool into the
// cluster directory and applies them.
func applyAWSDefaults(ctx context.Context, cluster *localcluster.Cluster, sim *awssim.Sim, out io.Writer) error {
	path := filepath.Join(cluster.Dir, "aws-defaults.yaml")
	if err := os.WriteFile(path, []byte(awsDefaultsFor(sim)), 0o644); err != nil {
		return err
	}
	return localcluster.Apply(ctx, cluster.Config, []string{path}, out)
}
