// Package pricing holds the AWS provider's price tables: on-demand prices
// per instance type from the AWS Price List Query API (GetProducts) and
// spot prices per instance type and zone from EC2's spot price history,
// refreshed on a schedule by the providers.pricing controller.
//
// Until the APIs answer, and for good when they cannot be reached
// (--isolated-vpc, GovCloud), the prices embedded in karp's EC2 catalog
// (us-east-1 on-demand) are used; before the first spot update a type's
// spot price is its on-demand price, as upstream. Updates merge into the
// tables, so a type never loses its price because one answer omitted it.
//
// The SDK clients sit behind the narrow interfaces declared here.
package pricing
