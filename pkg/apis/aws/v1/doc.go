// Package v1 holds the karpenter.k8s.aws/v1 API: EC2NodeClass, the
// NodeClass of karp's AWS EC2 provider, with the label, annotation and tag
// keys that provider reads and writes on cluster and EC2 objects.
//
// Users bring the EC2NodeClass manifests they wrote for upstream Karpenter
// unchanged, so field names, JSON names, defaults and validation follow the
// upstream karpenter.k8s.aws/v1 schema. Admission is the API server's: the
// rules live in kubebuilder markers (OpenAPI and CEL) compiled into the CRD
// in pkg/apis/crds, with no webhook.
//
// The schema is upstream's v1.14 schema (testdata/upstream names the
// commit; upstream_schema_test.go diffs the two CRDs and lists karp's
// few status-only additions). spec.kubelet is upstream's open map: the
// API server checks nothing inside it, karp reads the fields it manages
// into typed fields and keeps the rest verbatim (KubeletConfiguration),
// and ValidateKubelet reports what upstream's controller reports, as the
// ValidationSucceeded condition. spec.cpuOptions, spec.connectionTracking
// and spec.placementGroupSelector are offered as upstream's.
//
// The package imports only k8s.io/api, k8s.io/apimachinery,
// k8s.io/apiextensions-apiserver's JSON type, karp's karpenter.sh/v1
// types and the hashstructure library for the drift hash;
// never controller-runtime, client-go or an AWS SDK.
//
// +k8s:deepcopy-gen=package
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1
