// Package awslifecycle holds a controller-level test of an EC2NodeClass's
// life in the whole controller process (--cloud-provider=aws on the
// stateful AWS fakes): the instance profile made for its role, the tags
// put on a registered NodeClaim's instance, and the termination finalizer
// that waits for the NodeClaims before deleting the class's launch
// templates and instance profile. It has no non-test code; it is its own
// package because one test process runs one controller manager.
package awslifecycle
