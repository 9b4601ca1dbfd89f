// Package sdkhttp is the HTTP client karp's AWS SDK clients send requests
// with: the SDK's own buildable client, with request bodies reduced to
// io.ReadCloser.
//
// Why: the SDK closes a request's body (smithy-go's safe reader) as soon as
// the response headers arrive, while net/http's write loop may still be
// finishing the request: after sending Content-Length bytes it copies what
// is left of the body to check for extra bytes. That copy uses the body's
// WriteTo, which a closed safe reader answers with (0, io.EOF) as an error;
// the write loop takes it for a failed write and closes the connection under
// the response being read ("use of closed network connection",
// aws-sdk-go-v2 #1825 and #2737). Without WriteTo the copy reads, a closed
// safe reader answers io.EOF as end of input, and the connection survives.
// Latency makes the race rare against AWS; against the simulated AWS on
// loopback it dropped about one large response in five.
//
// The package imports only the SDK's HTTP transport.
package sdkhttp
