package simulation

// verdict is a cached compatibility check: the caches of which pod
// variants a node, a pool or a NodeClaim's requirements admit are slices
// by variant id of verdicts, so the check runs once per pair.
type verdict uint8

const (
	// unchecked: the check has not run yet (the zero value, so a grown
	// cache starts unchecked).
	unchecked verdict = iota
	// compatible: the check passed.
	compatible
	// incompatible: the check failed; the pair is never tried again.
	incompatible
)
