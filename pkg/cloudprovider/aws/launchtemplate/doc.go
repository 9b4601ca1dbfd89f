// Package launchtemplate creates the EC2 launch templates karp launches
// through: one per distinct AMI, user data (which names max pods),
// security groups, volumes, metadata options and tags, named
// karpenter.k8s.aws/<hash of its contents> so identical templates are
// shared across NodeClaims and any change makes a new one. Templates are
// remembered in memory; a use refreshes them and GC deletes those unused
// for a minute (the ones found at start included). Only templates named
// karpenter.k8s.aws/... and tagged eks:eks-cluster-name=<cluster> are
// learned at start or deleted with their EC2NodeClass, whatever filter
// DescribeLaunchTemplates applied.
//
// Interfaces: one primary interface, the EC2NodeClass's own layout, or,
// when the NodeClaim's pods request vpc.amazonaws.com/efa, one EFA
// interface per EFA the type has (so types with different counts get
// templates of their own). A reserved launch targets its reservation
// only, with the capacity-block market for a capacity block and the
// interruptible-capacity-reservation market for an interruptible one;
// other launches stay out of open reservations.
//
// User data comes from package userdata. EC2 is reached only through the
// narrow ec2API interface (fake.EC2 in tests).
package launchtemplate
