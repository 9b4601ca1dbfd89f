// Package volumelimits gathers what the solver needs to keep nodes within
// their CSI volume attach limits: each registered node's limits from its
// CSINode (spec.drivers[].allocatable.count) and, for the pods the solver
// places or counts, the claims they attach by CSI driver (a bound claim's
// PersistentVolume names the driver, an unbound one its StorageClass's
// provisioner; in-tree plugins count as the CSI drivers they migrated to).
// Provisioning and disruption both fill their solver input with it (Fill,
// through the API), and `karp simulate` with the same rules from the
// manifests (Apply, given the CSINodes and an Objects over the manifests),
// so all of them respect the same limits.
//
// The lookups live here; resolving a driver from the objects and checking
// a limit are pure code in pkg/scheduling (ClaimDriver, CSINodeLimits,
// VolumeLimits.ExceededBy) and pkg/simulation. A claim, volume or class
// that is gone makes the claim count for no driver, as upstream: the pass
// goes on without it. Other read errors are returned.
package volumelimits
