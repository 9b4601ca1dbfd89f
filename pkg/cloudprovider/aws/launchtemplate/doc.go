// Package launchtemplate creates the EC2 launch templates karp launches
// through: one per distinct AMI, user data (which names max pods),
// security groups, volumes, metadata options and tags, named
// karpenter.k8s.aws/<hash of its contents> so identical templates are
// shared across NodeClaims and any change makes a new one. Templates are
// remembered in memory; a use refreshes them and GC deletes those unused
// for a minute (the ones found at start included).
//
// User data comes from package userdata. EC2 is reached only through the
// narrow ec2API interface (fake.EC2 in tests).
package launchtemplate
