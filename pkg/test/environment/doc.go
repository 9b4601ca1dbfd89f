// Package environment starts a real etcd and kube-apiserver (built from
// pinned Go modules into bin/k8s by hack/build-tools.sh) with the karp CRDs
// installed, for controller and API validation tests.
//
// Typical use, once per test package:
//
//	var env *environment.Environment
//
//	func TestMain(m *testing.M) {
//		ctx := context.Background()
//		var err error
//		env, err = environment.Start(ctx)
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		code := m.Run()
//		if err := env.Stop(); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//		}
//		os.Exit(code)
//	}
//
// which Main does in one line:
//
//	func TestMain(m *testing.M) { environment.Main(m, &env) }
//
// or, per test, env := environment.New(t), which stops with the test.
// Controller suites that need a manager and a cluster state on top build
// them per test with pkg/test/controllertest.
//
// env.Client is a controller-runtime client whose scheme knows the built-in
// Kubernetes types, karpenter.sh/v1 and karpenter.kwok.sh/v1alpha1;
// env.Config is the admin rest.Config for building other clients.
// env.Create(t, objs...) creates objects that are deleted when the test
// ends.
//
// The binaries come from $KARP_BIN_DIR/k8s, else bin/k8s under the
// repository root (found by walking up to go.mod). When they are missing or
// stale the package runs hack/build-tools.sh first (minutes from a cold
// cache, then a no-op); it never skips. etcd keeps its data on tmpfs
// (/dev/shm) when available and runs without fsync: the data is throwaway.
//
// The environment runs no controllers: no kube-controller-manager, no
// scheduler, no default ServiceAccount. Tests that need those use the full
// local cluster in test/e2e/framework.
package environment
