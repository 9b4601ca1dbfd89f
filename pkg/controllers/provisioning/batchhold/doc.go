// Package batchhold lifts the batch hold. One solve plans a whole batch
// of new nodes as one packing. Their nodes turn Ready one by one, and the kube-scheduler
// retries every pending pod each time one does: each try that fails
// (the pod's own node is not Ready yet) doubles the pod's backoff, up to
// 10s, and clears its nominated node, so by the time the pod's node is
// Ready the pod waits out a long backoff and is then placed by the
// scheduler's own scoring instead of karp's plan (a mix of large and
// small pods then no longer fits and needs more nodes).
//
// So registration puts karpv1.BatchHoldNoScheduleTaint on each node of a
// multi-node batch (NodeClaims annotated karpv1.ProvisioningBatchAnnotationKey),
// in place of the unregistered taint; pods that fail on a tainted node
// wait, without backoff, for the taint to go. Controller lifts it
// from every node of the batch at once when every NodeClaim of the batch
// is initialized (or deleted), after refreshing the scheduler hints of
// their pods, so each pod is tried once more, on the node it was planned
// for. A node initialized longer than the hold's bound is lifted alone:
// a slow or failed peer delays the others by at most that long.
//
// Invariants:
//   - Only NodeClaims of one provisioning pass share a batch name, and a
//     batch of one node is never held (the provisioner names no batch).
//   - No node is held longer than the bound after it is initialized.
//   - A lift is a guarded JSON patch: a Node whose taints changed since
//     the cache's copy is not patched, and the Node watch brings the batch
//     back.
//
// The package is part of provisioning; it must not import
// pkg/controllers/provisioning (which names the batches).
package batchhold
