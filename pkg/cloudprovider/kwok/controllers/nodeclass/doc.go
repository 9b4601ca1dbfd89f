// Package nodeclass keeps each KWOKNodeClass's status current: Ready is
// True while the NodeClass exists and False (Terminating) once it is being
// deleted, stamped with the object's generation so readers can tell the
// condition describes the current spec.
//
// A KWOKNodeClass has nothing to resolve (no subnets, images or roles as a
// real cloud's NodeClass would), so readiness follows from existence. The
// NodePool readiness controller mirrors this condition into each NodePool's
// NodeClassReady, and the kwok provider refuses to launch for a NodeClass
// whose Ready is not True.
package nodeclass
