package localcluster

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// loopback is the only address any component listens on.
const loopback = "127.0.0.1"

// Ports are the TCP ports one local cluster listens on, all on 127.0.0.1.
type Ports struct {
	EtcdClient        int `json:"etcdClient"`
	EtcdPeer          int `json:"etcdPeer"`
	APIServer         int `json:"apiServer"`
	Scheduler         int `json:"scheduler"`
	ControllerManager int `json:"controllerManager"`
	KWOK              int `json:"kwok"`
}

// All lists every port.
func (p Ports) All() []int {
	return []int{p.EtcdClient, p.EtcdPeer, p.APIServer, p.Scheduler, p.ControllerManager, p.KWOK}
}

// freePorts asks the kernel for distinct free loopback ports. All
// listeners stay open until every port is picked, so the ports differ from
// each other; another process may still grab one before the component
// binds it, which start-up reports as a component failure.
func freePorts() (Ports, error) {
	const n = 6
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
		if err != nil {
			return Ports{}, fmt.Errorf("picking a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return Ports{
		EtcdClient: ports[0], EtcdPeer: ports[1], APIServer: ports[2],
		Scheduler: ports[3], ControllerManager: ports[4], KWOK: ports[5],
	}, nil
}

// PortInUse reports whether something listens on 127.0.0.1:port.
func PortInUse(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, strconv.Itoa(port)))
	if err != nil {
		var opErr *net.OpError
		return errors.As(err, &opErr)
	}
	_ = l.Close()
	return false
}

func hostPort(port int) string { return net.JoinHostPort(loopback, strconv.Itoa(port)) }
