package kwok

// The kwok provider's "instances" are Nodes it creates itself (annotated
// kwok.x-k8s.io/node: fake for kwok to simulate), finds by name, lists and
// deletes; it reads the NodeClaims it resumes and their KWOKNodeClasses.
// hack/generate.sh turns these markers into the chart's ClusterRole.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.kwok.sh,resources=kwoknodeclasses,verbs=get;list;watch
