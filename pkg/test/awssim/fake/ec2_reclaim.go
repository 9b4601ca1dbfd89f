package fake

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Reclaim is EC2 taking a spot instance back, as it does two minutes after
// the interruption warning: a pending or running instance turns
// shutting-down, then terminated after the termination delay, as if
// terminated. It is no API call (no fault injection, no call count). It
// reports whether the instance was reclaimed: false for an unknown
// instance and for one already shutting down, terminated or stopped.
func (e *EC2) Reclaim(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	inst, ok := e.launch.instances[id]
	if !ok {
		return false
	}
	switch e.launch.instanceView(inst).State.Name {
	case ec2types.InstanceStateNamePending, ec2types.InstanceStateNameRunning:
	default:
		return false
	}
	inst.State = &ec2types.InstanceState{Name: ec2types.InstanceStateNameShuttingDown, Code: aws.Int32(32)}
	inst.shutdownAt = e.launch.clock.Now().Add(e.launch.terminationDelay)
	return true
}
