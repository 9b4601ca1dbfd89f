package fake

// imageState holds the fake's AMIs.
type imageState struct{}
