package v1

import (
	"encoding/json"
	"fmt"
	"time"
)

// Never is the NillableDuration spelling of "no duration": the feature it
// configures (expiry, consolidation) is turned off.
const Never = "Never"

// NillableDuration is a duration that may be Never. It reads and writes as a
// JSON string: a Go duration ("720h", "30s", "1h30m") or "Never", which is
// held as a nil Duration.
//
// The schema (type string plus a pattern) is set on each field that uses it,
// since the allowed pattern differs from field to field.
type NillableDuration struct {
	*time.Duration
}

// NewNillableDuration returns a NillableDuration holding d.
func NewNillableDuration(d time.Duration) NillableDuration {
	return NillableDuration{Duration: &d}
}

// ParseNillableDuration parses "Never" or a Go duration string.
func ParseNillableDuration(s string) (NillableDuration, error) {
	if s == Never {
		return NillableDuration{}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return NillableDuration{}, fmt.Errorf("parsing duration %q: %w", s, err)
	}
	return NillableDuration{Duration: &d}, nil
}

// MustParseNillableDuration is ParseNillableDuration for constants; it panics on bad input.
func MustParseNillableDuration(s string) NillableDuration {
	d, err := ParseNillableDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// IsNever reports whether the duration is Never (nil).
func (d NillableDuration) IsNever() bool { return d.Duration == nil }

// String returns "Never" or the Go duration string.
func (d NillableDuration) String() string {
	if d.Duration == nil {
		return Never
	}
	return d.Duration.String()
}

// MarshalJSON writes "Never" for a nil duration and the Go duration string otherwise.
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads "Never" as nil and any other string as a Go duration.
// JSON null also reads as Never.
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		d.Duration = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("decoding duration: %w", err)
	}
	parsed, err := ParseNillableDuration(s)
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

// ToUnstructured lets the unstructured converter write the same string as MarshalJSON.
func (d NillableDuration) ToUnstructured() interface{} {
	return d.String()
}
