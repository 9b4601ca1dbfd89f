package manifest

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
)

// Set is every object read from the manifests, by kind, in input order.
// NodePools and KWOKNodeClasses carry their CRD defaults.
type Set struct {
	NodePools   []*karpv1.NodePool
	NodeClasses []*kwokv1alpha1.KWOKNodeClass
	// NodeOverlays change the instance types' prices and extended
	// resources, as the NodeOverlay feature gate does in the controller.
	NodeOverlays []*karpv1alpha1.NodeOverlay
	// CapacityBuffers and ProvisioningRequests are validated and
	// defaulted by their CRDs; PodTemplates count only as what they
	// reference.
	CapacityBuffers      []*autoscalingv1beta1.CapacityBuffer
	ProvisioningRequests []*autoscalingv1.ProvisioningRequest
	PodTemplates         []*corev1.PodTemplate
	Pods                 []*corev1.Pod
	Nodes                []*corev1.Node
	Namespaces           []*corev1.Namespace
	LimitRanges          []*corev1.LimitRange
	Deployments          []*appsv1.Deployment
	ReplicaSets          []*appsv1.ReplicaSet
	StatefulSets         []*appsv1.StatefulSet
	DaemonSets           []*appsv1.DaemonSet
	Jobs                 []*batchv1.Job
	PDBs                 []*policyv1.PodDisruptionBudget
	PriorityClasses      []*schedulingv1.PriorityClass
	// Services count only for their selectors: kube-scheduler's default
	// topology spread selects a pod's peers by the Services selecting it.
	Services []*corev1.Service
	// CSINodes, PersistentVolumeClaims, PersistentVolumes and
	// StorageClasses count only for CSI volume limits: an existing node
	// attaches at most its CSINode's count of each driver's volumes, and a
	// claim's driver is its volume's or its class's.
	CSINodes       []*storagev1.CSINode
	Claims         []*corev1.PersistentVolumeClaim
	Volumes        []*corev1.PersistentVolume
	StorageClasses []*storagev1.StorageClass
	// Warnings list what was read but not used (unknown kinds), one line
	// each, naming the source.
	Warnings []string

	// sources remembers where each object came from, by "Kind ns/name".
	sources map[string]Source
}

// SourceOf returns where the object with key "Kind namespace/name" (or
// "Kind name" for cluster-scoped kinds) was read.
func (s *Set) SourceOf(key string) (Source, bool) {
	src, ok := s.sources[key]
	return src, ok
}

// Counts returns how many objects of each kind were read.
func (s *Set) Counts() map[string]int {
	return map[string]int{
		"NodePool": len(s.NodePools), "KWOKNodeClass": len(s.NodeClasses), "NodeOverlay": len(s.NodeOverlays), "Pod": len(s.Pods),
		"Node": len(s.Nodes), "Namespace": len(s.Namespaces), "LimitRange": len(s.LimitRanges),
		"Deployment": len(s.Deployments), "ReplicaSet": len(s.ReplicaSets), "StatefulSet": len(s.StatefulSets),
		"DaemonSet": len(s.DaemonSets), "Job": len(s.Jobs), "PodDisruptionBudget": len(s.PDBs),
		"PriorityClass": len(s.PriorityClasses), "Service": len(s.Services), "CSINode": len(s.CSINodes),
		"PersistentVolumeClaim": len(s.Claims), "PersistentVolume": len(s.Volumes), "StorageClass": len(s.StorageClasses),
		"CapacityBuffer": len(s.CapacityBuffers), "ProvisioningRequest": len(s.ProvisioningRequests), "PodTemplate": len(s.PodTemplates),
	}
}
