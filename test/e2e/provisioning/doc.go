// Package provisioning is the end-to-end suite for provisioning: the local
// control plane (etcd, kube-apiserver, kube-scheduler,
// kube-controller-manager, kwok) with karp-controller (`karp controller`) running as a
// separate process on the kwok provider, built by TestMain from this
// repository. Each test creates its own NodePools and workloads, waits on
// real cluster state, and removes what it made before the next one starts.
package provisioning
