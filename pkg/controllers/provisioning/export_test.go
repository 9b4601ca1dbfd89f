package provisioning

// SetBatcherWaitingHook sets the function b.Wait calls each time it is
// about to block, with the number of triggers still queued.
func SetBatcherWaitingHook(b *Batcher, f func(queued int)) { b.waiting = f }

// BookedPods is the virtual pods p keeps room for, for the booked
// ProvisioningRequests, given the pending pods and the nodes.
var BookedPods = (*Provisioner).bookedPods
