package awssim

import (
	"net/http"
)

// eksRoutes are the EKS operations served (the provider only describes its
// cluster).
var eksRoutes = []restRoute{
	{method: http.MethodGet, path: []string{"clusters", "{name}"}, operation: "DescribeCluster"},
}

// NewEKSHandler serves backend's DescribeCluster as EKS does: GET
// /clusters/{name}, a camelCase JSON body, and errors with their code in
// the X-Amzn-ErrorType header.
func NewEKSHandler(backend any) http.Handler {
	return newRESTHandler("EKS", eksRoutes, backend)
}
