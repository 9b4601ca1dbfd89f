// Package localcluster runs a real Kubernetes control plane on loopback for
// `karp up`, `make run` and the end-to-end tests: etcd, kube-apiserver,
// kube-scheduler, kube-controller-manager and kwok, built from pinned Go
// modules into bin/k8s by hack/build-tools.sh.
//
// It owns everything in the cluster directory (default
// $HOME/.karp/local): the generated PKI (a CA, the API server's serving
// certificate, one client certificate per component, the service-account
// signing key), a kubeconfig per component plus the admin kubeconfig
// (system:masters), component logs under logs/, etcd data, and a state file
// recording the supervising process, every component pid and every port, so
// `karp down` from another shell can stop the cluster.
//
// Invariants:
//   - Everything listens on 127.0.0.1 only, on ports picked free at start,
//     so several clusters (parallel test packages) can coexist.
//   - Every component runs in its own process group, dies with its
//     supervisor (Pdeathsig), and is stopped with SIGTERM then SIGKILL.
//   - A component that exits while the cluster runs is reported with the
//     tail of its log; it is never hidden or silently restarted. Only a
//     deliberate Restart (SIGKILL, then the same command line, ports and
//     data) goes unreported; Signal pauses (SIGSTOP) and resumes (SIGCONT)
//     a component. Both exist for the chaos tests.
//   - kwok manages only Nodes annotated KWOKNodeAnnotationKey=
//     KWOKNodeAnnotationValue, which is how the kwok cloud provider marks the
//     nodes it creates.
//
// The package talks to the API server only through client-go and
// controller-runtime clients; it never shells out to kubectl.
package localcluster
