// Package zonalshift honours the cluster's Amazon Application Recovery
// Controller (ARC) zonal shifts (--enable-zonal-shift, as upstream's AWS
// provider): Provider reads the shifts on the cluster's EKS ARN with
// arc-zonal-shift:GetManagedResource and hands the zones shifted away from
// (by zone ID, until each shift's expiry) to the unavailable-offerings
// cache, which makes every offering of those zones unavailable for
// launches; Controller refreshes them every 30 seconds and publishes
// ZonalShiftActive / ZonalShiftCleared on the NodePools that can provision
// into a zone whose shift began or ended.
//
// A shift counts while ARC reports it APPLIED and its expiry is in the
// future; a shift ARC stops listing (cancelled or expired) clears at the
// next refresh, an expiry between refreshes clears at once. As upstream,
// only zonal shifts (including practice runs ARC lists among them) are
// read, not the resource's autoshift list.
//
// The package imports no controller and no simulator; the SDK client is
// behind ARCAPI, declared here.
package zonalshift
