// Package options holds the AWS provider's settings: every flag with its
// environment variable and default, named as upstream Karpenter's AWS
// provider names them, so a Karpenter deployment's settings (Helm values,
// env vars) carry over unchanged.
//
// AddFlags registers them on the controller's FlagSet next to the core
// options (pkg/options); Validate is called once the FlagSet is
// parsed and --cloud-provider selects aws, and reports every missing or
// invalid setting by its flag and variable name. Options are passed
// explicitly to the provider's constructors; nothing reads them from a
// context.
package options
