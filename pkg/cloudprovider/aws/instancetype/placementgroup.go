package instancetype

import (
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/placementgroup"
)

// withPlacementGroup adds the class's placement group to the type, as
// upstream does: the group's ID (and a partition group's partitions) as
// requirements, and no available offering when the type does not support
// the group's strategy. Partitions stay a requirement of the type rather
// than one offering each (upstream's expansion): an offering here has no
// requirements beyond zone, capacity type and reservation.
func withPlacementGroup(it *cloudprovider.InstanceType, group *awsv1.PlacementGroup, info *ec2types.InstanceTypeInfo) {
	if group == nil {
		return
	}
	it.Requirements.Add(placementgroup.Requirements(group)...)
	if placementgroup.Compatible(group, info) {
		return
	}
	for _, o := range it.Offerings {
		o.Available = false
	}
}
