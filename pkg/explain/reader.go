package explain

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// errReadOnly is what every write through a readOnly client returns:
// explain and simulate never change the cluster they read.
var errReadOnly = errors.New("karp explain is read-only: refusing to write to the cluster")

// readOnly is a client.Client that reads through a client.Reader and
// refuses every write, so the controllers' code run by explain cannot
// change the cluster whatever path it takes.
type readOnly struct {
	client.Reader
	scheme *runtime.Scheme
}

var _ client.Client = readOnly{}

func (readOnly) Create(context.Context, client.Object, ...client.CreateOption) error {
	return errReadOnly
}
func (readOnly) Delete(context.Context, client.Object, ...client.DeleteOption) error {
	return errReadOnly
}
func (readOnly) Update(context.Context, client.Object, ...client.UpdateOption) error {
	return errReadOnly
}
func (readOnly) Patch(context.Context, client.Object, client.Patch, ...client.PatchOption) error {
	return errReadOnly
}
func (readOnly) DeleteAllOf(context.Context, client.Object, ...client.DeleteAllOfOption) error {
	return errReadOnly
}
func (readOnly) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	return errReadOnly
}
func (readOnly) Status() client.SubResourceWriter                { return readOnlySub{} }
func (readOnly) SubResource(string) client.SubResourceClient     { return readOnlySub{} }
func (r readOnly) Scheme() *runtime.Scheme                       { return r.scheme }
func (readOnly) RESTMapper() meta.RESTMapper                     { return nil }
func (readOnly) IsObjectNamespaced(runtime.Object) (bool, error) { return false, errReadOnly }
func (r readOnly) GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	return apiutil.GVKForObject(obj, r.scheme)
}

// readOnlySub refuses status and subresource writes.
type readOnlySub struct{}

func (readOnlySub) Get(context.Context, client.Object, client.Object, ...client.SubResourceGetOption) error {
	return errReadOnly
}
func (readOnlySub) Create(context.Context, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	return errReadOnly
}
func (readOnlySub) Update(context.Context, client.Object, ...client.SubResourceUpdateOption) error {
	return errReadOnly
}
func (readOnlySub) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	return errReadOnly
}
func (readOnlySub) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return errReadOnly
}

// objectReader is a client.Reader over objects in memory: a dump taken
// with `kubectl get -o yaml`. It serves Get by namespace and name and List
// by namespace and label selector, the reads the controllers make.
type objectReader struct {
	scheme  *runtime.Scheme
	objects map[schema.GroupVersionKind][]client.Object
}

func newObjectReader(scheme *runtime.Scheme, objs []client.Object) (*objectReader, error) {
	r := &objectReader{scheme: scheme, objects: map[schema.GroupVersionKind][]client.Object{}}
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil, err
		}
		r.objects[gvk] = append(r.objects[gvk], obj)
	}
	return r, nil
}

// Get copies the object with the key into obj.
func (r *objectReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(obj, r.scheme)
	if err != nil {
		return err
	}
	for _, o := range r.objects[gvk] {
		if o.GetName() == key.Name && o.GetNamespace() == key.Namespace {
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o.DeepCopyObject()).Elem())
			return nil
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind)}, key.Name)
}

// List fills list with copies of the matching objects.
func (r *objectReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := apiutil.GVKForObject(list, r.scheme)
	if err != nil {
		return err
	}
	if !strings.HasSuffix(gvk.Kind, "List") {
		return fmt.Errorf("%s is not a list kind", gvk.Kind)
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	var items []runtime.Object
	for _, o := range r.objects[gvk] {
		if lo.Namespace != "" && o.GetNamespace() != lo.Namespace {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		items = append(items, o.DeepCopyObject())
	}
	return meta.SetList(list, items)
}
