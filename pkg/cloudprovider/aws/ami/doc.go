// Package ami resolves an EC2NodeClass's amiSelectorTerms to AMIs, as
// upstream Karpenter does:
//
//   - An alias (family@version, the only term when present) reads the
//     EKS-optimized AMI IDs AWS publishes in SSM Parameter Store for the
//     cluster's Kubernetes version, one parameter per architecture and
//     variant (standard, NVIDIA, Neuron), and tags each image with the
//     instance-type requirements of its variant.
//   - Other terms select by ID (and ssmParameter values) in one query, and
//     by tags, name and owner in a query each; those images carry only an
//     architecture requirement.
//
// Of the images found, one is kept per distinct requirement set: a
// non-deprecated image beats a deprecated one, then the newest, then the
// greatest name. Results are cached per NodeClass generation for the
// refresh interval; SSM parameters are cached by name (alias parameters for
// a day, ssmParameter terms for five minutes).
//
// The pure parts (Aliases, Select, Queries) build requests and decide; the
// Provider calls EC2 and SSM through the narrow interfaces it declares.
package ami
