package simulate

import "github.com/karp-autoscaler/karp/pkg/options"

// gates says which gated objects among the manifests the dry-run serves.
// Without --feature-gates (nil), every one: having NodeOverlays, static
// NodePools, CapacityBuffers or ProvisioningRequests in the manifests asks
// for them. With it, exactly as a controller run with the same value
// (unnamed gates keep the controller's defaults, all off for these).
type gates struct{ fg *options.FeatureGates }

func (g gates) on(name string) bool { return g.fg == nil || g.fg.Enabled(name) }

// offWarning says that the manifests' objects of a gate that is off are
// left alone, as the controller leaves them.
func offWarning(what, gate string) string {
	return what + ": ignored: the " + gate + " feature gate is off (--feature-gates=" + gate + "=true serves it)"
}
