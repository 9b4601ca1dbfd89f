package lifecycle

// NodeSyncPatch exposes nodeSyncPatch to the package's external tests.
var NodeSyncPatch = nodeSyncPatch
