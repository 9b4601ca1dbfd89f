// Package controllertest is the shared setup of the controller suites
// that drive karp's singleton loops (provisioning, disruption) against a
// real API server: per test, a controller-runtime manager whose cache
// feeds a fresh in-memory cluster state through the real informer
// controllers, a fake cloud provider and a fake clock, plus clean-up
// between tests and a few waiting helpers.
//
// Typical use:
//
//	var env *environment.Environment
//
//	func TestMain(m *testing.M) { environment.Main(m, &env) }
//
//	func TestX(t *testing.T) {
//		h := controllertest.New(t, env, statecontrollers.Register, fake.New())
//		np := h.ReadyNodePool(test.MakeNodePool("default").Obj())
//		...
//	}
//
// The package does not import pkg/controllers: the suite passes the state
// controllers' Register function in, and builds the controller under test
// over Harness.Manager and Harness.Cluster itself.
//
// Events about cluster-scoped objects (NodePools, NodeClaims) are written
// to the default namespace, which is where Events looks for them.
package controllertest
