// Package framework runs end-to-end suites against a full local cluster
// (etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok
// from pkg/localcluster), started once per test package:
//
//	func TestMain(m *testing.M) { framework.Main(m) }  // or os.Exit(framework.Run(m))
//
//	func TestSomething(t *testing.T) {
//		f := framework.Current(t)
//		node := framework.MakeKWOKNode("n1")
//		... f.Client.Create(ctx, node) ...
//	}
//
// Main builds missing control plane binaries (hack/build-tools.sh), starts
// the cluster in a temporary directory, runs the tests and stops the
// cluster whatever their outcome; if the test binary is killed, the
// components die with it (Pdeathsig). A component that dies during the run
// fails the package with the tail of its log.
package framework
