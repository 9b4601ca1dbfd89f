// Package refresh holds the singleton controllers that keep the AWS
// provider's EC2-backed tables fresh: providers.instancetype re-reads
// instance types and their zonal offerings, providers.pricing re-reads
// on-demand and spot prices, each right after start and then every 12
// hours, as upstream. A failed refresh is returned to controller-runtime
// (which retries with backoff) and the provider keeps its previous data.
//
// The controllers only call the provider's Update; what is read and how it
// is merged belongs to packages instancetype and pricing.
package refresh
