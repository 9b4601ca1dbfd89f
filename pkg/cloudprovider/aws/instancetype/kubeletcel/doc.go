// Package kubeletcel evaluates the CEL expressions an EC2NodeClass may put
// in spec.kubelet under the NodeClassCEL AWS feature gate (maxPods), per
// instance type, with upstream Karpenter's variables and functions:
//
//	vcpus, memory_mib, default_enis, ips_per_eni, max_pods  int
//	instance_type                                           string
//	min(a, b), max(a, b)                                    int or double
//
// An expression returns an int or a double (truncated). max_pods is the
// pod density the family would use without the expression.
//
// It is pure: no client, no clock.
package kubeletcel
