// Package awsprovisioning holds controller-level tests of karp's
// provisioner running with the AWS provider on the stateful AWS fakes: the
// seed workloads become CreateFleet calls whose cheapest instance types
// are those `karp simulate` picks on the same catalog, and a 1,000-pod
// scale-out's EC2 calls per launched node are measured. It has no
// non-test code.
package awsprovisioning
