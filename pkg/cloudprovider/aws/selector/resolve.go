package selector

import (
	"context"
	"slices"
	"strings"
)

// Query is one Describe* request of a NodeClass's selector terms and the
// indices of the terms it answers (all id terms together, or one tags
// term).
type Query[T any] struct {
	// Terms are the indices of the selector terms this request answers.
	Terms []int
	// List runs the request, every page, and returns what it found.
	List func(ctx context.Context) ([]T, error)
	// Answers reports whether obj answers term i (a request for several
	// id terms answers each with its own objects); nil: every object
	// found answers every term of the query.
	Answers func(i int, obj T) bool
}

// Resolution is what one kind of a NodeClass's selector terms (subnets,
// security groups) resolved to.
type Resolution[T any] struct {
	// Selected are the objects any term selected, once each, sorted by ID.
	Selected []T
	// Unmatched are the indices of the terms nothing answered (a mistyped
	// ID next to a working tag term, say), sorted.
	Unmatched []int
}

// Clone returns a copy sharing no slice with r, for a cache to hand out.
func (r Resolution[T]) Clone() Resolution[T] {
	return Resolution[T]{Selected: slices.Clone(r.Selected), Unmatched: slices.Clone(r.Unmatched)}
}

// Resolve runs the queries and returns what the terms resolved to, id
// naming each object. The first failing request's error is returned as
// it is.
func Resolve[T any](ctx context.Context, queries []Query[T], id func(T) string) (Resolution[T], error) {
	byID := map[string]T{}
	var unmatched []int
	for _, q := range queries {
		found, err := q.List(ctx)
		if err != nil {
			return Resolution[T]{}, err
		}
		for _, obj := range found {
			byID[id(obj)] = obj
		}
		for _, i := range q.Terms {
			if !slices.ContainsFunc(found, func(obj T) bool { return q.Answers == nil || q.Answers(i, obj) }) {
				unmatched = append(unmatched, i)
			}
		}
	}
	selected := make([]T, 0, len(byID))
	for _, obj := range byID {
		selected = append(selected, obj)
	}
	slices.SortFunc(selected, func(a, b T) int { return strings.Compare(id(a), id(b)) })
	slices.Sort(unmatched)
	return Resolution[T]{Selected: selected, Unmatched: unmatched}, nil
}
