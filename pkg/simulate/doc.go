// Package simulate is `karp simulate`: an offline dry-run that reads the
// manifests a user is about to apply, runs karp's scheduling simulator on
// them against an instance-type catalog, and reports which NodeClaims karp
// would launch, what they cost, and why any pod would stay pending.
//
// It gathers (pkg/manifest), decides (pkg/simulation.Solve) and renders
// (table, JSON, or the karpv1.NodeClaim objects as YAML, rendered by
// pkg/render exactly as the provisioner creates them); it holds no
// placement or rendering logic of its own. Static NodePools, NodeOverlays,
// CapacityBuffers and ProvisioningRequests are served with the code their
// controllers run (simulation.StaticNodeClaims, pkg/cloudprovider/overlay,
// capacitybuffer.Resolve and pkg/state/buffers, provisioningrequest.Fit),
// behind the controller's feature gates when --feature-gates is given. It
// never talks to an API server or a cloud.
//
// Invariants:
//   - The same manifests and catalog always give the same report (names,
//     order, prices).
//   - Every pending pod is either on a NodeClaim (a static NodePool's
//     included), on an existing node, or in Unschedulable with the
//     simulator's reasons, one per NodePool tried. A CapacityBuffer's
//     virtual pods are never among them: they are counted per buffer.
package simulate
