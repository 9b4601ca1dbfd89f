package v1

// CPUOptions are the EC2 CPU options of the class's instances.
type CPUOptions struct {
	// NestedVirtualization "enabled" lets the instance run its own
	// hypervisor: karp then offers only instance types whose
	// DescribeInstanceTypes ProcessorInfo.SupportedFeatures lists
	// nested-virtualization and sets CpuOptions.NestedVirtualization in the
	// launch template. "disabled" is sent as is and filters nothing.
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	NestedVirtualization *string `json:"nestedVirtualization,omitempty"`
}

// NestedVirtualizationEnabled and NestedVirtualizationDisabled are the
// values of CPUOptions.NestedVirtualization.
const (
	NestedVirtualizationEnabled  = "enabled"
	NestedVirtualizationDisabled = "disabled"
)

// NestedVirtualization reports whether the class asks for nested
// virtualization, which restricts it to the instance types supporting it.
func (in *EC2NodeClass) NestedVirtualization() bool {
	return in.Spec.CPUOptions != nil && in.Spec.CPUOptions.NestedVirtualization != nil &&
		*in.Spec.CPUOptions.NestedVirtualization == NestedVirtualizationEnabled
}

// ConnectionTracking sets idle connection tracking timeouts on the network
// interfaces karp puts in the launch template: the primary interface and
// every networkInterfaces entry of type interface, not EFA-only ones.
// Interfaces the CNI attaches later are the CNI's to configure. The
// timeouts need Nitro instance types; idle connections kept too long can
// fill the security group's connection tracking table and drop packets.
// +kubebuilder:validation:XValidation:message="at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set",rule="has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)"
type ConnectionTracking struct {
	// TCPEstablishedTimeout is how long (seconds) an idle established TCP
	// connection is tracked. Unset, EC2's default applies (350 seconds on
	// Nitro v6 instance types except P6e-GB200, 432,000 otherwise).
	// +kubebuilder:validation:Minimum:=60
	// +kubebuilder:validation:Maximum:=432000
	// +optional
	TCPEstablishedTimeout *int32 `json:"tcpEstablishedTimeout,omitempty"`
	// UDPStreamTimeout is how long (seconds) an idle UDP flow that has
	// seen more than one request-response transaction is tracked (EC2's
	// default 180).
	// +kubebuilder:validation:Minimum:=60
	// +kubebuilder:validation:Maximum:=180
	// +optional
	UDPStreamTimeout *int32 `json:"udpStreamTimeout,omitempty"`
	// UDPTimeout is how long (seconds) an idle UDP flow seen in one
	// direction or for one request-response transaction is tracked (EC2's
	// default 30).
	// +kubebuilder:validation:Minimum:=30
	// +kubebuilder:validation:Maximum:=60
	// +optional
	UDPTimeout *int32 `json:"udpTimeout,omitempty"`
}
