package kwok

import (
	"context"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// MarkOfferingUnavailable treats the offering as out of capacity for the
// unavailable-offerings TTL, as after a spot interruption notice: the
// replacement is launched elsewhere.
func (c *CloudProvider) MarkOfferingUnavailable(_ context.Context, key cloudprovider.OfferingKey) {
	c.unavailable.MarkUnavailable(key)
}
