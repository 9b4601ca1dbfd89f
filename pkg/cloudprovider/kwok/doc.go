// Package kwok is karp's runnable reference provider: its "instances" are
// Nodes it creates on the cluster's own API server, which the kwok
// controller (run by pkg/localcluster) then keeps Ready and runs pods on.
//
// Instance types come from a catalog file, by default the embedded EC2
// catalog (1,364 types, package instancetypes) with offerings in
// us-east-1a/b/c derived by pkg/catalog (on-demand at the listed price,
// spot by its documented deterministic discount). Every type also carries
// the karpenter.kwok.sh instance labels (family, size, cpu, memory).
//
// Create resolves the KWOKNodeClass (missing: InsufficientCapacity, as
// upstream; not Ready or terminating: NodeClassNotReady), launches the
// cheapest available compatible offering (cloudprovider.LaunchCandidates),
// and creates a Node named after the NodeClaim with providerID
// kwok://<name>, the karpenter.sh/unregistered:NoExecute taint, the launch
// labels plus hostname and kwok's markers, and the type's capacity and
// allocatable. With a registration delay (KWOKNodeClass
// spec.nodeRegistrationDelay, else the provider default) the Node is
// created by a goroutine after the delay, retrying until it exists or the
// launch is deleted; until then Get and List report the pending instance.
// Create is idempotent: a retry finds the pending launch or the Node
// (annotated with the NodeClaim's UID), also after a restart. A delayed
// launch outlives the process that started it, as a booting instance
// would: List restarts, with the remaining delay, the launch of a Launched,
// unregistered NodeClaim that has neither a Node nor a pending launch.
//
// Insufficient capacity is simulated: Create refuses configured offerings
// with an InsufficientCapacityError and puts the refused offering into an
// UnavailableOfferings cache for a TTL, during which GetInstanceTypes
// reports it unavailable so the next scheduling round falls back.
//
// The provider talks to the API server only through the controller-runtime
// client it is given; time comes from the injected clock. Its own
// controllers live under controllers/ (KWOKNodeClass status and hash, the
// simulated spot interruption notices of `karp interrupt`); pkg/operator
// registers them beside the core ones when the process runs on kwok.
package kwok
