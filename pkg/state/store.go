package state

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// object is an API object the view keeps its own copy of.
type object[T any] interface {
	client.Object
	DeepCopy() T
}

// recorded is the copy of obj the view keeps: deep, so the caller's object
// can change afterwards, and without managed fields, which nothing in karp
// reads and which are often the largest part of an object.
func recorded[T object[T]](obj T) T {
	obj = obj.DeepCopy()
	obj.SetManagedFields(nil)
	return obj
}

// store is the view's copies of one kind of object, by key, for kinds the
// view only records and lists (DaemonSets, NodePools, PDBs). It takes the
// Cluster's lock, so a Cluster-wide read sees every kind at one moment.
type store[K string | types.NamespacedName, T object[T]] struct {
	mu    *sync.RWMutex
	keyOf func(T) K
	items map[K]T
}

func newStore[K string | types.NamespacedName, T object[T]](mu *sync.RWMutex, keyOf func(T) K) *store[K, T] {
	return &store[K, T]{mu: mu, keyOf: keyOf, items: map[K]T{}}
}

// update records a copy of obj (see recorded), replacing any object with
// the same key. The copy is made before taking the lock.
func (s *store[K, T]) update(obj T) {
	obj = recorded(obj)
	key := s.keyOf(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[key] = obj
}

// delete forgets the object with the key, if any.
func (s *store[K, T]) delete(key K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, key)
}

// list returns copies of every object, in key order (names, or
// namespace/name), so callers iterate deterministically.
func (s *store[K, T]) list() []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]T, 0, len(s.items))
	for _, key := range sortedKeys(s.items) {
		out = append(out, s.items[key].DeepCopy())
	}
	return out
}

// namespacedKey keys namespaced objects by namespace/name.
func namespacedKey[T object[T]](obj T) types.NamespacedName { return client.ObjectKeyFromObject(obj) }

// nameKey keys cluster-scoped objects by name.
func nameKey[T object[T]](obj T) string { return obj.GetName() }
