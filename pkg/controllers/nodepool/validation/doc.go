// Package validation sets a NodePool's ValidationSucceeded condition from
// karpv1's RuntimeValidate: the checks the CRD schema cannot express
// (restricted labels outside the well-known set, duplicate taints,
// requirement operator/value rules). A failing NodePool is False with
// reason NodePoolValidationFailed and the error as message, so its Ready
// root is False and the provisioner skips it.
//
// It also sets two informational conditions, outside Ready, each with a
// warning event per spec change: ReplicasServed=False on a static
// NodePool while the StaticCapacity feature gate is off (with it on, the
// nodepool/static controller owns that condition), and DisruptionBudgetsValid=False on a NodePool with a budget
// that cannot be evaluated (karpv1's ValidateBudgets).
package validation
