package scheduling

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// HostPort is one host port a pod binds. An empty or 0.0.0.0 IP binds every
// address and so conflicts with any IP on the same port and protocol.
type HostPort struct {
	IP       string
	Port     int32
	Protocol corev1.Protocol
}

func (h HostPort) String() string {
	ip := h.IP
	if ip == "" {
		ip = "0.0.0.0"
	}
	return fmt.Sprintf("%s:%d/%s", ip, h.Port, h.Protocol)
}

// Conflicts reports whether two host ports cannot share a node.
func (h HostPort) Conflicts(o HostPort) bool {
	if h.Port != o.Port || h.Protocol != o.Protocol {
		return false
	}
	return h.IP == o.IP || isWildcard(h.IP) || isWildcard(o.IP)
}

func isWildcard(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }

// PodHostPorts lists the host ports of a pod's containers (init containers
// do not keep ports bound).
func PodHostPorts(pod *corev1.Pod) []HostPort {
	var out []HostPort
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			out = append(out, HostPort{IP: p.HostIP, Port: p.HostPort, Protocol: proto})
		}
	}
	return out
}

// HostPortConflict returns the first port of want that conflicts with used.
func HostPortConflict(used, want []HostPort) (HostPort, bool) {
	for _, w := range want {
		for _, u := range used {
			if w.Conflicts(u) {
				return w, true
			}
		}
	}
	return HostPort{}, false
}
