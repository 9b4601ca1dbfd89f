// Package capacitytype demotes NodeClaims and Nodes whose on-demand
// capacity reservation ended, as upstream Karpenter's AWS provider's
// capacityreservation.capacitytype controller does.
//
// When an on-demand capacity reservation expires or is cancelled, EC2
// keeps its instances running as plain on-demand instances. Every minute
// the controller lists the cluster's instances (the cloud provider's
// List) and, for each NodeClaim labelled reserved whose instance is
// on-demand now, sets karpenter.sh/capacity-type to on-demand and removes
// the reservation labels (karpenter.k8s.aws/capacity-reservation-id and
// -type, and karp's karpenter.sh/reservation-id) on the NodeClaim and on
// its registered Nodes. A Node whose NodeClaim was demoted before it
// registered is demoted on a later pass. Deleting NodeClaims and Nodes are
// left alone: they are draining already. Nothing is ever promoted to
// reserved.
//
// It imports no AWS SDK: the cloud provider's List says what each
// instance is.
package capacitytype
