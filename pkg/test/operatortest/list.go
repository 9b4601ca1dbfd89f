package operatortest

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// forEach calls fn with every item of list.
func forEach(list client.ObjectList, fn func(client.Object)) error {
	return meta.EachListItem(list, func(o runtime.Object) error {
		if obj, ok := o.(client.Object); ok {
			fn(obj)
		}
		return nil
	})
}
