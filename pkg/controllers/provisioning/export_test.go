package provisioning

// SetBatcherWaitingHook sets the function b.Wait calls each time it is
// about to block, with the number of triggers still queued.
func SetBatcherWaitingHook(b *Batcher, f func(queued int)) { b.waiting = f }
