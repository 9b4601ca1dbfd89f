package fake

// launchState holds the fake's launch templates, fleets and instances.
type launchState struct{}
