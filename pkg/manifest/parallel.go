package manifest

import (
	"encoding/json"
	"runtime"
	"sync"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"
)

// decodeItems decodes the built-in objects of a List concurrently (large
// Lists of pods dominate load time). An item it cannot decode cleanly
// (custom resources, unknown kinds, any error) is left nil for the
// sequential path, which reports errors and warnings in input order.
func (l *loader) decodeItems(items []json.RawMessage, inherit typeMeta) []kruntime.Object {
	out := make([]kruntime.Object, len(items))
	workers := min(runtime.GOMAXPROCS(0), len(items)/64+1)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(items); i += workers {
				out[i] = l.decodeBuiltin(items[i], inherit)
			}
		}(w)
	}
	wg.Wait()
	return out
}

// decodeBuiltin strictly decodes a supported built-in kind, or returns nil.
func (l *loader) decodeBuiltin(data []byte, inherit typeMeta) kruntime.Object {
	var tm typeMeta
	if err := json.Unmarshal(data, &tm); err != nil || tm.Kind == "" && tm.APIVersion == "" && inherit.Kind != "" {
		return nil
	}
	gvk := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	if !supported[gvk] {
		return nil
	}
	obj, err := l.scheme.New(gvk)
	if err != nil {
		return nil
	}
	strict, err := sigsjson.UnmarshalStrict(data, obj)
	if err != nil || len(strict) > 0 {
		return nil
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj
}
