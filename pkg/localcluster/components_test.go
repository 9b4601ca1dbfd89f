package localcluster

import (
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestComponentsListenOnLoopbackOnly(t *testing.T) {
	ports := Ports{EtcdClient: 2001, EtcdPeer: 2002, APIServer: 2003, Scheduler: 2004, ControllerManager: 2005, KWOK: 2006}
	hostRE := regexp.MustCompile(`(?:https?://)?(\d+\.\d+\.\d+\.\d+):\d+`)
	for _, comp := range renderComponents(layout{"/c"}, ports) {
		for _, arg := range comp.args {
			for _, m := range hostRE.FindAllStringSubmatch(arg, -1) {
				if !net.ParseIP(m[1]).IsLoopback() {
					t.Errorf("%s: %s binds or points to non-loopback %s", comp.name, arg, m[1])
				}
			}
			if strings.HasPrefix(arg, "--bind-address=") && arg != "--bind-address=127.0.0.1" {
				t.Errorf("%s: %s", comp.name, arg)
			}
		}
	}
}

func TestComponentFlags(t *testing.T) {
	ports := Ports{EtcdClient: 2001, EtcdPeer: 2002, APIServer: 2003, Scheduler: 2004, ControllerManager: 2005, KWOK: 2006}
	byName := map[string][]string{}
	var order []string
	for _, comp := range renderComponents(layout{"/c"}, ports) {
		byName[comp.name] = comp.args
		order = append(order, comp.name)
	}
	if !slices.Equal(order, componentOrder) {
		t.Errorf("order = %v, want %v", order, componentOrder)
	}
	tests := map[string]struct {
		component string
		want      []string
	}{
		"api server authorizes with Node and RBAC": {APIServer, []string{"--authorization-mode=Node,RBAC", "--secure-port=2003", "--etcd-servers=http://127.0.0.1:2001"}},
		"api server does not refuse a burst (no in-flight limit)": {APIServer, []string{
			"--enable-priority-and-fairness=false", "--max-requests-inflight=0", "--max-mutating-requests-inflight=0",
		}},
		"api server verifies client certs and signs SA tokens": {APIServer, []string{
			"--client-ca-file=/c/pki/ca.crt", "--service-account-signing-key-file=/c/pki/sa.key", "--service-account-key-file=/c/pki/sa.pub",
		}},
		"controller-manager runs every default controller and signs": {ControllerManager, []string{
			"--controllers=*", "--cluster-signing-cert-file=/c/pki/ca.crt", "--cluster-signing-key-file=/c/pki/ca.key",
			"--service-account-private-key-file=/c/pki/sa.key", "--root-ca-file=/c/pki/ca.crt", "--secure-port=2005",
		}},
		"scheduler serves health on its port": {Scheduler, []string{"--secure-port=2004", "--kubeconfig=/c/kube-scheduler.kubeconfig"}},
		"kwok manages only annotated nodes": {KWOK, []string{
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--config=/c/kwok.yaml", "--server-address=127.0.0.1:2006",
		}},
		"etcd is a single loopback member": {Etcd, []string{"--listen-client-urls=http://127.0.0.1:2001", "--initial-cluster=karp=http://127.0.0.1:2002"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for _, w := range tc.want {
				if !slices.Contains(byName[tc.component], w) {
					t.Errorf("%s args lack %s: %v", tc.component, w, byName[tc.component])
				}
			}
		})
	}
	// Excluding a controller (e.g. "-nodelifecycle") would leave kwok
	// nodes tainted not-ready forever.
	for _, arg := range byName[ControllerManager] {
		if value, ok := strings.CutPrefix(arg, "--controllers="); ok && strings.Contains(value, "-") {
			t.Errorf("controller-manager disables a controller: %s", arg)
		}
	}
}

func TestFreePortsAreDistinct(t *testing.T) {
	p, err := freePorts()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, port := range p.All() {
		if port <= 0 || seen[port] {
			t.Fatalf("ports %v are not distinct positive ports", p.All())
		}
		seen[port] = true
	}
}
