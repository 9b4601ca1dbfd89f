// Package securitygroup discovers the security groups an EC2NodeClass's
// securityGroupSelectorTerms select, as upstream Karpenter does: all id
// terms in one group-id query, all name terms (the EC2 group name, not the
// Name tag) in one group-name query, and every tags term in a query of its
// own; answers are unioned by group ID. Results are cached per NodeClass
// generation for a minute, so a spec change is resolved afresh.
package securitygroup
