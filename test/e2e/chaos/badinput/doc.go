// Package badinput is bad input applied to a running cluster, for the
// chaos suite to throw at karp while it scales, consolidates and drifts:
// invalid NodePools (unknown operators, restricted labels, bad budgets,
// schedules and durations, limits of the wrong type), invalid
// KWOKNodeClasses and EC2NodeClasses, malformed annotations, and pods
// karp cannot help (absurd requests, impossible node affinities, a taint
// nothing tolerates).
//
// Each Case names its one expected outcome, exactly as karp gives it
// today:
//
//   - Rejection: the API server refuses the object, with a cause whose
//     field is the bad field and whose message says what is wrong;
//   - Event: karp (reporting controller "karpenter") records an event of
//     that reason about the object, whose note names the problem;
//   - Condition: karp sets a status condition on the object naming it;
//   - Annotation: karp replaces a malformed annotation of its own.
//
// Use:
//
//	results := badinput.Run(ctx, cl, namespace)   // applies every case
//	err := badinput.Verify(ctx, cl, results)      // waits for each outcome
//	err = badinput.Cleanup(ctx, cl, results)      // deletes what was accepted
//
// Verify also checks that bad input disturbed nothing: no NodeClaim was
// launched for a case's NodePool and no case's pod was bound to a node or
// nominated for one. Result.Seen holds karp's answer to each case, for a
// report.
//
// The bad pods stay Pending by design: call Cleanup before checking that
// every pod of the cluster runs. The two pods bad only in their
// do-not-disrupt annotation (Case.Runs) do run, on whatever node karp
// gives them, and may be disrupted: karp ignores their annotation.
//
// What karp says about a pod it cannot help lists every NodePool (by
// weight, then name descending) and is cut at 1,000 characters. The cases'
// own NodePools are tainted so that no other pod lands on them; those a
// case's pod selects have weight 100 so their line comes first; the
// others sort after most NodePool names. The absurd-request and
// impossible-zone cases expect the line of a NodePool open to any pod
// (the chaos suite's own), so the cluster needs one.
//
// The cases create cluster-scoped objects named with the "badinput-"
// prefix, so Run must not be called twice without a Cleanup in between.
// The pods are in the caller's namespace, which must exist. Pods are only
// looked at by karp once the kube-scheduler has marked them
// unschedulable; on an API server without a scheduler, the caller marks
// them (see the package's tests).
package badinput
