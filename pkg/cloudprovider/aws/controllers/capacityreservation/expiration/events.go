package expiration

import (
	"fmt"
	"time"
)

// ReasonCapacityBlockExpiring is the Warning event on a NodeClaim (and its
// Node) deleted because its capacity block is about to end. Upstream
// publishes no event here; karp names the cause.
const ReasonCapacityBlockExpiring = "CapacityBlockExpiring"

// expiringMessage explains the deletion.
func expiringMessage(reservationID string, end, reclaimAt time.Time) string {
	return fmt.Sprintf("Capacity block %s ends at %s and EC2 reclaims its instances from %s: draining the node before then",
		reservationID, end.UTC().Format(time.RFC3339), reclaimAt.UTC().Format(time.RFC3339))
}
