// Package capacityreservation discovers the on-demand capacity reservations
// and capacity blocks an EC2NodeClass's capacityReservationSelectorTerms
// select, and keeps count of the instances each can still take, as
// upstream Karpenter does.
//
// Every term is a query of its own: an id term asks for that reservation
// (a reservation that no longer exists matches nothing rather than
// failing), other terms filter by owner, tags and match criteria. Only
// active reservations are asked for, and one whose end date has passed is
// dropped. Answers are cached for a minute per query.
//
// Each listing sets the available instance count of every reservation it
// saw; launches and terminations adjust the count between listings
// (MarkLaunched, MarkTerminated), and a launch refused for lack of capacity
// zeroes it (MarkUnavailable), so the scheduler stops offering a
// reservation that is full.
//
// Get describes reservations by ID the same way (the capacity-block
// expiration controller reads the reservations its NodeClaims name), and
// Expiring says when a capacity block stops taking launches and its nodes
// are drained: 40 minutes before its end, 10 minutes before EC2 starts
// reclaiming its instances.
package capacityreservation
