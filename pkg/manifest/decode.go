package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
)

// Load reads every manifest file named by paths (directories are walked
// recursively for .yaml, .yml and .json files).
func Load(paths ...string) (*Set, error) {
	return LoadFrom(nil, paths...)
}

// StdinPath is the path that stands for standard input, as with kubectl.
const StdinPath = "-"

// LoadFrom is Load where the path "-" reads stdin (at most once).
func LoadFrom(stdin io.Reader, paths ...string) (*Set, error) {
	files, err := expandPaths(paths)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no manifest files (.yaml, .yml, .json) under %s", strings.Join(paths, ", "))
	}
	l, err := newLoader()
	if err != nil {
		return nil, err
	}
	stdinRead := false
	for _, f := range files {
		var data []byte
		var err error
		switch {
		case f != StdinPath:
			data, err = os.ReadFile(f)
		case stdin == nil || stdinRead:
			err = errors.New("standard input (-) is not available or was given twice")
		default:
			stdinRead = true
			data, err = io.ReadAll(stdin)
		}
		if err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		if err := l.addFile(f, data); err != nil {
			return nil, err
		}
	}
	return l.set, nil
}

// loader decodes documents into a Set.
type loader struct {
	set     *Set
	scheme  *runtime.Scheme
	decoder runtime.Decoder
	crds    map[schema.GroupVersionKind]*crdValidator
}

func newLoader() (*loader, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme,
		policyv1.AddToScheme, schedulingv1.AddToScheme, storagev1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}
	decoder := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Strict: true})
	return &loader{set: &Set{sources: map[string]Source{}}, scheme: scheme, decoder: decoder}, nil
}

// addFile decodes every document of one file.
func (l *loader) addFile(file string, data []byte) error {
	docs, err := splitDocuments(file, data)
	if err != nil {
		return err
	}
	for _, d := range docs {
		if err := l.addDocument(d.source, d.json); err != nil {
			return err
		}
	}
	return nil
}

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// list is a List document; items are decoded one by one.
type list struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   json.RawMessage   `json:"metadata,omitempty"`
	Items      []json.RawMessage `json:"items"`
}

func (l *loader) addDocument(src Source, data []byte) error {
	return l.addObject(src, data, typeMeta{})
}

// addObject decodes one object; items of a typed list (PodList, ...) may
// leave apiVersion and kind to the list (inherit).
func (l *loader) addObject(src Source, data []byte, inherit typeMeta) error {
	// One pass reads the type and, for a List, its items.
	var lst list
	if err := json.Unmarshal(data, &lst); err != nil {
		// Not a List (e.g. an object whose items field is no array).
		var tm typeMeta
		if err := json.Unmarshal(data, &tm); err != nil {
			return &Error{Source: src, Err: fmt.Errorf("not a Kubernetes object: %w", err)}
		}
		lst = list{APIVersion: tm.APIVersion, Kind: tm.Kind}
	}
	tm := typeMeta{APIVersion: lst.APIVersion, Kind: lst.Kind}
	if tm.Kind == "" && tm.APIVersion == "" && inherit.Kind != "" {
		var err error
		if data, err = withTypeMeta(data, inherit); err != nil {
			return &Error{Source: src, Err: err}
		}
		tm = inherit
	}
	switch {
	case tm.Kind == "":
		return &Error{Source: src, Err: errors.New("kind: Required value")}
	case tm.APIVersion == "":
		return &Error{Source: src, Err: errors.New("apiVersion: Required value")}
	case strings.HasSuffix(tm.Kind, "List"):
		if src.Item >= 0 {
			return &Error{Source: src, Err: fmt.Errorf("kind: a %s inside a List is not supported", tm.Kind)}
		}
		var inherit typeMeta
		if tm.Kind != "List" {
			inherit = typeMeta{APIVersion: tm.APIVersion, Kind: strings.TrimSuffix(tm.Kind, "List")}
		}
		decoded := l.decodeItems(lst.Items, inherit)
		for i, item := range lst.Items {
			var err error
			if decoded[i] != nil {
				err = l.addTyped(src.item(i), decoded[i])
			} else {
				err = l.addObject(src.item(i), item, inherit)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	gvk := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	if gvk.Group == karpv1.Group || gvk.Group == kwokv1alpha1.Group || gvk.Group == autoscalingv1.Group {
		return l.addCustom(src, gvk, data)
	}
	if want, ok := servedVersion(gvk); ok && want != gvk {
		return &Error{Source: src, Object: describe(gvk.Kind, data),
			Err: fmt.Errorf("apiVersion: Unsupported value: %q: %s is served as %s", tm.APIVersion, gvk.Kind, want.GroupVersion())}
	}
	if !supported[gvk] {
		l.set.Warnings = append(l.set.Warnings, fmt.Sprintf("%s: skipped %s %s: kind not used by karp", src, tm.APIVersion, tm.Kind))
		return nil
	}
	obj, _, err := l.decoder.Decode(data, nil, nil)
	if err != nil {
		if path := badQuantityPath(data); path != "" {
			err = fmt.Errorf("%s: %w", path, err)
		}
		return &Error{Source: src, Object: describe(gvk.Kind, data), Err: err}
	}
	return l.addTyped(src, obj)
}

// supported are the built-in kinds karp reads.
var supported = map[schema.GroupVersionKind]bool{
	corev1.SchemeGroupVersion.WithKind("Pod"):                   true,
	corev1.SchemeGroupVersion.WithKind("PodTemplate"):           true,
	corev1.SchemeGroupVersion.WithKind("Node"):                  true,
	corev1.SchemeGroupVersion.WithKind("Namespace"):             true,
	corev1.SchemeGroupVersion.WithKind("LimitRange"):            true,
	appsv1.SchemeGroupVersion.WithKind("Deployment"):            true,
	appsv1.SchemeGroupVersion.WithKind("ReplicaSet"):            true,
	appsv1.SchemeGroupVersion.WithKind("StatefulSet"):           true,
	appsv1.SchemeGroupVersion.WithKind("DaemonSet"):             true,
	batchv1.SchemeGroupVersion.WithKind("Job"):                  true,
	policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"): true,
	schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"):   true,
	corev1.SchemeGroupVersion.WithKind("Service"):               true,
	corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"): true,
	corev1.SchemeGroupVersion.WithKind("PersistentVolume"):      true,
	storagev1.SchemeGroupVersion.WithKind("CSINode"):            true,
	storagev1.SchemeGroupVersion.WithKind("StorageClass"):       true,
}

// withTypeMeta sets apiVersion and kind on a JSON object.
func withTypeMeta(data []byte, tm typeMeta) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	obj["apiVersion"], _ = json.Marshal(tm.APIVersion)
	obj["kind"], _ = json.Marshal(tm.Kind)
	return json.Marshal(obj)
}

// servedVersion returns the version karp reads a built-in kind in, when
// gvk names one of its kinds in the same group.
func servedVersion(gvk schema.GroupVersionKind) (schema.GroupVersionKind, bool) {
	for want := range supported {
		if want.Group == gvk.Group && want.Kind == gvk.Kind {
			return want, true
		}
	}
	return schema.GroupVersionKind{}, false
}

// describe names an object for errors: "Kind namespace/name" as far as
// its metadata can be read.
func describe(kind string, data []byte) string {
	var m struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(data, &m)
	if m.Metadata.Name == "" {
		return kind
	}
	if m.Metadata.Namespace == "" && namespaced(kind) {
		m.Metadata.Namespace = corev1.NamespaceDefault
	}
	return objectKey(kind, m.Metadata.Namespace, m.Metadata.Name)
}

// addCustom validates and defaults a karp custom resource against its CRD.
func (l *loader) addCustom(src Source, gvk schema.GroupVersionKind, data []byte) error {
	if l.crds == nil {
		v, err := newCRDValidators()
		if err != nil {
			return err
		}
		l.crds = v
	}
	v, ok := l.crds[gvk]
	if !ok {
		for served := range l.crds {
			if served.Group == gvk.Group && served.Kind == gvk.Kind {
				return &Error{Source: src, Object: describe(gvk.Kind, data),
					Err: fmt.Errorf("apiVersion: Unsupported value: %q: %s is served as %s", gvk.GroupVersion(), gvk.Kind, served.GroupVersion())}
			}
		}
		l.set.Warnings = append(l.set.Warnings, fmt.Sprintf("%s: skipped %s %s: kind not used by karp simulate", src, gvk.GroupVersion(), gvk.Kind))
		return nil
	}
	what := describe(gvk.Kind, data)
	var obj map[string]interface{}
	if err := utiljson.Unmarshal(data, &obj); err != nil {
		return &Error{Source: src, Object: what, Err: err}
	}
	if err := v.admit(obj); err != nil {
		return &Error{Source: src, Object: what, Err: err}
	}
	defaulted, err := json.Marshal(obj)
	if err != nil {
		return &Error{Source: src, Object: what, Err: err}
	}
	var typed runtime.Object
	switch gvk.Kind {
	case "NodePool":
		typed = &karpv1.NodePool{}
	case "KWOKNodeClass":
		typed = &kwokv1alpha1.KWOKNodeClass{}
	case "NodeOverlay":
		typed = &karpv1alpha1.NodeOverlay{}
	case "CapacityBuffer":
		typed = &autoscalingv1beta1.CapacityBuffer{}
	case "ProvisioningRequest":
		typed = &autoscalingv1.ProvisioningRequest{}
	default:
		l.set.Warnings = append(l.set.Warnings, fmt.Sprintf("%s: skipped %s: kind not used by karp simulate", src, what))
		return nil
	}
	if err := json.Unmarshal(defaulted, typed); err != nil {
		return &Error{Source: src, Object: what, Err: err}
	}
	return l.addTyped(src, typed)
}

// addTyped files a decoded object, defaulting its namespace and refusing
// duplicates.
func (l *loader) addTyped(src Source, obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return &Error{Source: src, Err: err}
	}
	kind := kindOf(obj)
	if m.GetName() == "" {
		if m.GetGenerateName() == "" {
			return &Error{Source: src, Object: kind, Err: errors.New("metadata.name: Required value")}
		}
		m.SetName(m.GetGenerateName() + suffixes(kind+"/"+m.GetNamespace()+"/"+m.GetGenerateName(), 1)[0])
	}
	if namespaced(kind) && m.GetNamespace() == "" {
		m.SetNamespace(corev1.NamespaceDefault)
	}
	if m.GetUID() == "" {
		m.SetUID(uidFor(kind, m.GetNamespace(), m.GetName()))
	}
	key := objectKey(kind, m.GetNamespace(), m.GetName())
	if prev, dup := l.set.sources[key]; dup {
		return &Error{Source: src, Object: key, Err: fmt.Errorf("defined twice (first at %s)", prev)}
	}
	l.set.sources[key] = src
	l.set.file(obj)
	return nil
}

func objectKey(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}

func namespaced(kind string) bool {
	switch kind {
	case "Node", "Namespace", "PriorityClass", "NodePool", "KWOKNodeClass", "NodeOverlay", "CSINode", "PersistentVolume", "StorageClass":
		return false
	}
	return true
}

func kindOf(obj runtime.Object) string {
	switch obj.(type) {
	case *karpv1.NodePool:
		return "NodePool"
	case *kwokv1alpha1.KWOKNodeClass:
		return "KWOKNodeClass"
	case *karpv1alpha1.NodeOverlay:
		return "NodeOverlay"
	case *autoscalingv1beta1.CapacityBuffer:
		return "CapacityBuffer"
	case *autoscalingv1.ProvisioningRequest:
		return "ProvisioningRequest"
	case *corev1.PodTemplate:
		return "PodTemplate"
	case *corev1.Pod:
		return "Pod"
	case *corev1.Node:
		return "Node"
	case *corev1.Service:
		return "Service"
	case *corev1.Namespace:
		return "Namespace"
	case *corev1.LimitRange:
		return "LimitRange"
	case *appsv1.Deployment:
		return "Deployment"
	case *appsv1.ReplicaSet:
		return "ReplicaSet"
	case *appsv1.StatefulSet:
		return "StatefulSet"
	case *appsv1.DaemonSet:
		return "DaemonSet"
	case *batchv1.Job:
		return "Job"
	case *policyv1.PodDisruptionBudget:
		return "PodDisruptionBudget"
	case *schedulingv1.PriorityClass:
		return "PriorityClass"
	case *corev1.PersistentVolumeClaim:
		return "PersistentVolumeClaim"
	case *corev1.PersistentVolume:
		return "PersistentVolume"
	case *storagev1.CSINode:
		return "CSINode"
	case *storagev1.StorageClass:
		return "StorageClass"
	}
	return fmt.Sprintf("%T", obj)
}

// file appends obj to the slice of its kind.
func (s *Set) file(obj runtime.Object) {
	switch o := obj.(type) {
	case *karpv1.NodePool:
		s.NodePools = append(s.NodePools, o)
	case *kwokv1alpha1.KWOKNodeClass:
		s.NodeClasses = append(s.NodeClasses, o)
	case *karpv1alpha1.NodeOverlay:
		s.NodeOverlays = append(s.NodeOverlays, o)
	case *autoscalingv1beta1.CapacityBuffer:
		s.CapacityBuffers = append(s.CapacityBuffers, o)
	case *autoscalingv1.ProvisioningRequest:
		s.ProvisioningRequests = append(s.ProvisioningRequests, o)
	case *corev1.PodTemplate:
		s.PodTemplates = append(s.PodTemplates, o)
	case *corev1.Pod:
		s.Pods = append(s.Pods, o)
	case *corev1.Node:
		s.Nodes = append(s.Nodes, o)
	case *corev1.Namespace:
		s.Namespaces = append(s.Namespaces, o)
	case *corev1.LimitRange:
		s.LimitRanges = append(s.LimitRanges, o)
	case *appsv1.Deployment:
		s.Deployments = append(s.Deployments, o)
	case *appsv1.ReplicaSet:
		s.ReplicaSets = append(s.ReplicaSets, o)
	case *appsv1.StatefulSet:
		s.StatefulSets = append(s.StatefulSets, o)
	case *appsv1.DaemonSet:
		s.DaemonSets = append(s.DaemonSets, o)
	case *batchv1.Job:
		s.Jobs = append(s.Jobs, o)
	case *policyv1.PodDisruptionBudget:
		s.PDBs = append(s.PDBs, o)
	case *schedulingv1.PriorityClass:
		s.PriorityClasses = append(s.PriorityClasses, o)
	case *corev1.Service:
		s.Services = append(s.Services, o)
	case *corev1.PersistentVolumeClaim:
		s.Claims = append(s.Claims, o)
	case *corev1.PersistentVolume:
		s.Volumes = append(s.Volumes, o)
	case *storagev1.CSINode:
		s.CSINodes = append(s.CSINodes, o)
	case *storagev1.StorageClass:
		s.StorageClasses = append(s.StorageClasses, o)
	}
}
