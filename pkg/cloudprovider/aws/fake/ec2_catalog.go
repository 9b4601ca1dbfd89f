package fake

// catalogState holds the fake's instance types, their zonal offerings and spot price history.
type catalogState struct{}
