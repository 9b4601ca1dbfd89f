// Package capacitybuffer holds the CapacityBuffer controller
// (autoscaling.x-k8s.io/v1beta1, CapacityBuffer feature gate): for each
// buffer it resolves the pod shape (a PodTemplate, or the pod template of
// a Deployment, ReplicaSet, StatefulSet or Job) and the number of pods
// (replicas, a percentage of the scalable object's replicas, resource
// limits), writes status.replicas, status.podTemplateRef and the
// ReadyForProvisioning condition, publishes the resolved buffer into the
// buffers.Store the provisioner and disruption read, and writes the
// Provisioning condition from where the provisioner's last pass placed the
// buffer's pods.
//
// It reads scalable objects straight from the API server: the manager's
// cache drops workloads' pod templates (pkg/operator). A buffer whose
// provisioningStrategy is not buffer.x-k8s.io/active-capacity is another
// autoscaler's: karp neither keeps room for it nor writes its status.
//
// Imports: pkg/apis, pkg/state/buffers, pkg/scheduling, controller-runtime;
// no other controller (it triggers the provisioner through a one-method
// interface).
package capacitybuffer
