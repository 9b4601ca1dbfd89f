// Package readiness sets a NodePool's NodeClassReady condition from the
// NodeClass it references: False NodeClassNotFound when missing (or of a
// kind the cloud provider does not support), False NodeClassTerminating
// while it is being deleted, else a copy of the NodeClass's Ready
// condition. The NodePool's Ready root follows (with ValidationSucceeded),
// and the provisioner ignores NodePools that are not Ready.
package readiness
