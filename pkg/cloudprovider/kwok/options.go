package kwok

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// DefaultZones are the zones offerings are derived in when the catalog
// lists none.
var DefaultZones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

type options struct {
	catalogPath       string
	instanceTypes     []*cloudprovider.InstanceType
	zones             []string
	clock             clock.WithTicker
	registrationDelay time.Duration
	unavailableTTL    time.Duration
	insufficient      []cloudprovider.OfferingKey
	retryBackoff      time.Duration
}

func defaultOptions() options {
	return options{
		zones:          DefaultZones,
		clock:          clock.RealClock{},
		unavailableTTL: DefaultUnavailableOfferingsTTL,
		retryBackoff:   200 * time.Millisecond,
	}
}

// Option configures New.
type Option func(*options)

// WithCatalogFile offers the instance types of a catalog file instead of
// the embedded EC2 catalog (the controller's --instance-types-file-path).
func WithCatalogFile(path string) Option { return func(o *options) { o.catalogPath = path } }

// WithInstanceTypes offers already loaded instance types (for example the
// result of LoadInstanceTypes shared between providers); it wins over
// WithCatalogFile and WithZones.
func WithInstanceTypes(types []*cloudprovider.InstanceType) Option {
	return func(o *options) { o.instanceTypes = types }
}

// WithZones sets the zones offerings are derived in (default us-east-1a/b/c).
func WithZones(zones ...string) Option { return func(o *options) { o.zones = zones } }

// WithClock sets the clock used for registration delays, retries and the
// unavailable-offerings TTL.
func WithClock(clk clock.WithTicker) Option { return func(o *options) { o.clock = clk } }

// WithRegistrationDelay is how long after Create the Node appears when the
// KWOKNodeClass does not say (default 0: the Node is created within Create).
func WithRegistrationDelay(d time.Duration) Option {
	return func(o *options) { o.registrationDelay = d }
}

// WithUnavailableOfferingsTTL sets how long a refused offering stays
// unavailable (default 3 minutes).
func WithUnavailableOfferingsTTL(ttl time.Duration) Option {
	return func(o *options) { o.unavailableTTL = ttl }
}

// WithInsufficientCapacity makes Create refuse these offerings with an
// InsufficientCapacityError, simulating a cloud that has run out of them.
func WithInsufficientCapacity(offerings ...cloudprovider.OfferingKey) Option {
	return func(o *options) { o.insufficient = append(o.insufficient, offerings...) }
}
