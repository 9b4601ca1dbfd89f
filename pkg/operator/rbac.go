package operator

// The operator's own API access, beside the controllers' markers next to
// each Reconcile. hack/generate.sh turns every marker under pkg/ into
// charts/karp/rbac/role.yaml: the ClusterRole's rules come from the
// cluster-scoped markers and the release namespace's Role from the markers
// below that name a namespace ("karp" is a placeholder; the chart binds the
// Role in its release namespace).
//
// Leader election (controller-runtime's Lease lock) reads, creates and
// renews one Lease, named by --leader-election-name (the chart keeps the
// default, karpenter-leader-election, which also keeps karp from leading
// while an upstream controller in the same namespace holds the Lease). A
// create cannot be limited to a name, so it has its own marker.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=karp,resources=leases,verbs=get;update;patch,resourceNames=karpenter-leader-election
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=karp,resources=leases,verbs=create
//
// The leader elector records "became leader" as a core/v1 Event on the
// Lease, in the Lease's namespace.
// +kubebuilder:rbac:groups="",namespace=karp,resources=events,verbs=create;patch
