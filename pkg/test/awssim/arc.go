package awssim

import (
	"net/http"
)

// arcRoutes are the ARC zonal shift operations served (the provider only
// reads its cluster's shifts). The path is the one the SDK's
// GetManagedResource serializes (arczonalshift@v1.34.8
// schemas/schemas.go: GET /managedresources/{resourceIdentifier}); the
// ARN in it is one path segment, its "/" escaped.
var arcRoutes = []restRoute{
	{method: http.MethodGet, path: []string{"managedresources", "{resourceIdentifier}"}, operation: "GetManagedResource"},
}

// NewARCZonalShiftHandler serves backend's GetManagedResource (fake.ARC)
// as ARC zonal shift does, signing name arc-zonal-shift: restJson1, a
// camelCase JSON body with timestamps in epoch seconds, and errors with
// their code in the X-Amzn-ErrorType header.
func NewARCZonalShiftHandler(backend any) http.Handler {
	return newRESTHandler("ARC zonal shift", arcRoutes, backend)
}
