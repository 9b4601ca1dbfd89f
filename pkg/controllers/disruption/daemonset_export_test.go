package disruption

// WithDaemonSetFit makes sure the controller tries DaemonSetFit, so its
// tests do not depend on where NewMethods lists it.
func WithDaemonSetFit(c *Controller) {
	for _, m := range c.methods {
		if _, ok := m.(*DaemonSetFit); ok {
			return
		}
	}
	c.methods = append(c.methods, &DaemonSetFit{c: c})
}
