// Package awsenv runs the AWS provider end to end on the local control
// plane for the AWS e2e suites (test/e2e/aws, test/e2e/awsfeatures): a
// simulated AWS account (pkg/test/awssim) served on loopback, its kubelets
// registering a Node for each instance it launches, and the karp
// controller running with --cloud-provider=aws against it:
//
//	e := awsenv.Start(t)                       // or New, then StartKarp
//	e.SetUp(t, e.NodeClass(name), awsenv.NodePool(name))
//	framework.Create(t, e.Client, framework.Deployment(name, name, name, 1, "500m"))
//	pods := e.WaitAvailable(t, name, 1)
//	inst, ok := e.InstanceOf(e.Node(t, pods[0].Spec.NodeName).Spec.ProviderID)
//
// Everything it starts or creates is stopped or deleted when the test that
// asked for it ends, in an order that lets karp terminate its own nodes
// first: a test's NodePools, NodeClaims and EC2NodeClasses go while the
// controller still runs, and no Node of the account outlives it.
//
// It is test support, not product code: only tests import it (the
// no-test-kits-in-product depguard rule keeps pkg/ and cmd/ away from
// test/).
package awsenv
