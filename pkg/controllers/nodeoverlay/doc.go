// Package nodeoverlay holds the NodeOverlay controller (NodeOverlay feature
// gate): it validates every NodeOverlay, checks them against each
// NodePool's instance types for conflicts between overlays of one weight,
// writes each overlay's ValidationSucceeded (and Ready) condition, and
// publishes the overlays to apply into the overlay.Store that the
// overlay.CloudProvider decorator reads.
//
// It evaluates all overlays at once, whichever object changed: one
// overlay's validity depends on the others. It runs at start, on every
// NodeOverlay or NodePool spec change and every six hours (upstream's
// period, for catalogs that change on their own).
//
// Imports: pkg/apis, pkg/cloudprovider (and its overlay package),
// controller-runtime; no other controller.
package nodeoverlay
