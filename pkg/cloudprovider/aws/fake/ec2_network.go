package fake

// networkState holds the fake's subnets and security groups.
type networkState struct{}
