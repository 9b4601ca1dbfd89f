// Package buffers holds the CapacityBuffers karp keeps room for, as the
// capacitybuffer controller resolved them (pod template and replicas), and
// builds their virtual pods: pods that are never created, which the
// provisioner places after the real pending pods (launching nodes when
// they fit nowhere) and the disruption simulator places before a
// consolidation's candidates (so a consolidation leaves their room). It
// also remembers where the provisioner's last pass placed each buffer's
// pods, for the buffer's Provisioning condition. Bookings hold, the same
// way, the room of ProvisioningRequests during their booking period.
//
// The Store is shared in memory between the capacitybuffer controller, the
// provisioner and disruption, which do not import each other.
//
// Imports: Kubernetes API packages, controller-runtime's event type and
// karp's CapacityBuffer and ProvisioningRequest APIs; no controller.
package buffers
