package manifest

import (
	"fmt"
)

// Source locates an object in the input: a file, the 1-based index of the
// non-empty document in it and, for an item of a List, the item's 0-based
// index (-1 otherwise).
type Source struct {
	File string
	Doc  int
	Item int
}

// String renders the location as "file: document N" or
// "file: document N: items[i]".
func (s Source) String() string {
	if s.Item >= 0 {
		return fmt.Sprintf("%s: document %d: items[%d]", s.File, s.Doc, s.Item)
	}
	return fmt.Sprintf("%s: document %d", s.File, s.Doc)
}

// item is the location of item i of the List at s.
func (s Source) item(i int) Source {
	s.Item = i
	return s
}

// Error is bad input at a Source.
type Error struct {
	Source Source
	// Object is "Kind namespace/name" when known.
	Object string
	Err    error
}

// Error renders "source (Kind namespace/name): message".
func (e *Error) Error() string {
	if e.Object != "" {
		return fmt.Sprintf("%s (%s): %v", e.Source, e.Object, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Source, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }
