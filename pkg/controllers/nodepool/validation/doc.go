// Package validation sets a NodePool's ValidationSucceeded condition from
// karpv1's RuntimeValidate: the checks the CRD schema cannot express
// (restricted labels outside the well-known set, duplicate taints,
// requirement operator/value rules). A failing NodePool is False with
// reason NodePoolValidationFailed and the error as message, so its Ready
// root is False and the provisioner skips it.
package validation
