// Package volumetopology reads, through the API, where a pod's volumes let
// it run: a bound PersistentVolume's node affinity (a zonal disk keeps its
// pod in its zone) or, for an unbound claim of a WaitForFirstConsumer
// StorageClass, the class's allowedTopologies. Provisioning resolves it for
// pending pods and disruption for the pods a candidate would evict, so
// both see the same constraints.
//
// The lookups live here; turning the objects into scheduling requirements
// is pure code in pkg/simulation (PersistentVolumeTerms, StorageClassTerms,
// CombineVolumeTerms). Callers decide what a missing claim, volume or class
// means for them: every lookup error wraps the API error, so
// apierrors.IsNotFound tells a missing object from a failed read.
package volumetopology
