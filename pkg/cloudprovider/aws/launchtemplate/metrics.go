package launchtemplate

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// UserDataBytes is the size of the user data last rendered into a new
// launch template of each EC2NodeClass (raw, before base64: what EC2's
// 16 KiB limit counts), set just before CreateLaunchTemplate so an
// oversized rendering is reported even though EC2 rejects it, and
// dropped when the EC2NodeClass's templates are deleted. As upstream's,
// only creation sets it: a NodeClass whose templates all exist already
// has no series until one is created.
var UserDataBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: metrics.Namespace,
	Subsystem: "ec2nodeclasses",
	Name:      "userdata_bytes",
	Help:      "Size in bytes of the rendered user data (raw, pre-base64) for the EC2NodeClass",
}, []string{"nodeclass"})

// Register registers the launch template metrics with reg; registering
// them again is not an error.
func Register(reg prometheus.Registerer) error {
	if err := reg.Register(UserDataBytes); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			return err
		}
	}
	return nil
}
