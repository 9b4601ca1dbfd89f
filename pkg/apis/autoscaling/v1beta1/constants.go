package v1beta1

// ActiveProvisioningStrategy is the default (and the only) strategy: the
// autoscaler keeps room for the buffer's pods, launching nodes when needed.
// A buffer with another strategy is left to whichever autoscaler knows it.
const ActiveProvisioningStrategy = "buffer.x-k8s.io/active-capacity"

// Condition types, as Cluster Autoscaler and upstream Karpenter write them.
const (
	// ConditionTypeReadyForProvisioning is True once the buffer's pod shape
	// and replicas are resolved (the capacitybuffer controller).
	ConditionTypeReadyForProvisioning = "ReadyForProvisioning"
	// ConditionTypeProvisioning is True when every pod of the buffer fits on
	// capacity that exists or is launching, False while new capacity is
	// needed or the buffer cannot be provisioned for.
	ConditionTypeProvisioning = "Provisioning"
)

// Reasons of ReadyForProvisioning.
const (
	// ReasonResolved: the pod template and replicas are resolved.
	ReasonResolved = "Resolved"
	// ReasonPodTemplateNotFound: spec.podTemplateRef names no PodTemplate.
	ReasonPodTemplateNotFound = "PodTemplateNotFound"
	// ReasonScalableRefNotFound: spec.scalableRef names no object.
	ReasonScalableRefNotFound = "ScalableRefNotFound"
	// ReasonResolutionFailed: neither reference is set, the scalableRef's
	// kind is not supported, or reading the reference failed.
	ReasonResolutionFailed = "ResolutionFailed"
	// ReasonUnsupportedProvisioningStrategy (karp's own): the strategy is
	// not buffer.x-k8s.io/active-capacity, so karp keeps no room.
	ReasonUnsupportedProvisioningStrategy = "UnsupportedProvisioningStrategy"
)

// Reasons of Provisioning.
const (
	// ReasonFitsExistingCapacity: every buffer pod fits on nodes that exist
	// or are launching.
	ReasonFitsExistingCapacity = "FitsExistingCapacity"
	// ReasonRequiresNewCapacity: some buffer pods need new nodes (launched
	// by the pass that said so), or fit nowhere karp may launch.
	ReasonRequiresNewCapacity = "RequiresNewCapacity"
	// ReasonNotReadyForProvisioning: ReadyForProvisioning is not True.
	ReasonNotReadyForProvisioning = "NotReadyForProvisioning"
	// ReasonBufferEmpty: the buffer resolves to zero replicas.
	ReasonBufferEmpty = "BufferEmpty"
)

// Supported scalableRef kinds (API group apps, or batch for Job).
const (
	KindDeployment  = "Deployment"
	KindReplicaSet  = "ReplicaSet"
	KindStatefulSet = "StatefulSet"
	KindJob         = "Job"
)

// Annotations on the virtual pods karp builds from a buffer: they exist
// only inside karp's simulations and are never created, but carry them so
// logs and `karp explain` can tell them apart (upstream's keys).
const (
	// AnnotationVirtualPod marks a virtual pod of a CapacityBuffer ("true").
	AnnotationVirtualPod = "karpenter.sh/capacity-buffer-fake-pod"
	// AnnotationBufferName and AnnotationBufferNamespace name its buffer.
	AnnotationBufferName      = "karpenter.sh/capacity-buffer-name"
	AnnotationBufferNamespace = "karpenter.sh/capacity-buffer-namespace"
)
