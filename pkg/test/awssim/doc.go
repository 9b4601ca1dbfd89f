// Package awssim is a simulated AWS served on loopback HTTP: the stateful
// fakes of package fake behind the wire protocols the AWS SDK for Go speaks
// (EC2 query, AWS query, AWS JSON 1.0 and 1.1, REST JSON), so a karp
// controller process reaches them unchanged through the SDK's standard
// endpoint settings (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>) and
// exercises the SDK's real serialization, pagination, retries and
// throttling.
//
// One listener serves every service: the Router reads the service name from
// the SigV4 credential scope of each request's Authorization header and
// hands the request to that service's handler. Handlers dispatch by
// operation name, by reflection, to the backend method of the same name and
// SDK signature (ctx, *XInput, ...func(*Options)) (*XOutput, error), so a
// fake gains a wire operation by gaining the method.
//
// The wire layer, by service (signing name, protocol, handler):
//
//	ec2              EC2 query (Action=..., XML)                           NewEC2Handler
//	iam              AWS query (Action=..., XML)                           NewIAMHandler
//	ssm              awsJson 1.1, AmazonSSM                                NewJSONHandler
//	sqs              awsJson 1.0, AmazonSQS                                NewJSONHandler (query-compatible error codes)
//	pricing          awsJson 1.1, AWSPriceListService                      NewJSONHandler
//	eks              restJson1, GET /clusters/{name}                       NewEKSHandler
//	arc-zonal-shift  restJson1, GET /managedresources/{resourceIdentifier} NewARCZonalShiftHandler
//
// Faults are injected at two levels. The fakes fail a named call with any
// error (fake.Faults.FailNext). The Router fails what the fakes cannot:
// Throttle answers with the service's own throttling error before the
// backend runs, and HoldAfter lets the backend act and then never answers,
// as when a controller dies between a call and recording its effect.
// Router.Calls counts requests as they arrived on the wire, retries
// included.
//
// Sim is an account (fake.NewAccount, the one seeding every simulated
// account shares) as the getting-started guide leaves it, with an SQS
// interruption queue, its EKS cluster registered with ARC zonal shift, spot reclaims and a simulated kubelet that registers
// a Node for each launched instance; Serve puts it on the wire.
//
// Invariants: a request never panics the server; every error a client sees
// is shaped as the service's protocol shapes it, with the code and message
// the SDK surfaces as a smithy.APIError. The package is test and local-run
// infrastructure under pkg/test: product code never imports it (a depguard
// rule in .golangci.yml), except `karp run --cloud-provider=aws` in
// cmd/karp, the local environment that runs the simulated AWS on purpose.
// It imports no local-cluster package: the Nodes its kubelet registers
// carry the kwok annotation defined with the kwok API.
package awssim
