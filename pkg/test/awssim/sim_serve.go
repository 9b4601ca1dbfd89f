package awssim

import (
	"errors"
	"net/http"
)

// Serve puts the Sim on a loopback port behind one Router, each service in
// its wire protocol, and returns the base URL (the SDK's AWS_ENDPOINT_URL).
// Close stops it.
func (s *Sim) Serve() (string, error) {
	if s.router != nil {
		return "", errors.New("awssim: the Sim is already served")
	}
	s.router = NewRouter(map[string]http.Handler{
		"ec2":     NewEC2Handler(s.EC2),
		"iam":     NewIAMHandler(s.IAM),
		"ssm":     NewJSONHandler("AmazonSSM", "1.1", &ssmBackend{SSM: s.SSM, outage: s.ssmDown}),
		"sqs":     NewJSONHandler("AmazonSQS", "1.0", s.SQS),
		"pricing": NewJSONHandler("AWSPriceListService", "1.1", s.Pricing),
		"eks":     NewEKSHandler(s.EKS),
		// ARC zonal shift's SigV4 signing name.
		"arc-zonal-shift": NewARCZonalShiftHandler(s.ARC),
	})
	url, stop, err := Listen(s.router)
	if err != nil {
		s.router = nil
		return "", err
	}
	s.url, s.stop = url, stop
	return url, nil
}

// Close stops serving and the pending spot reclaims; calls held by
// HoldAfter are released.
func (s *Sim) Close() {
	s.mu.Lock()
	for _, stop := range s.reclaims {
		stop()
	}
	s.reclaims = nil
	s.mu.Unlock()
	if s.stop != nil {
		s.stop()
	}
}

// Router is the served Sim's router, for Throttle, HoldAfter and Calls (nil
// before Serve).
func (s *Sim) Router() *Router { return s.router }

// URL is the served Sim's base URL ("" before Serve).
func (s *Sim) URL() string { return s.url }

// Env is the environment a controller process needs to use the served Sim
// through the SDK's default configuration: every service's endpoint, the
// region, static credentials, no instance metadata, no shared config files
// and no CA bundle (the user's AWS settings must not leak in).
func (s *Sim) Env() []string {
	return []string{
		"AWS_ENDPOINT_URL=" + s.url,
		"AWS_REGION=" + s.opts.Region,
		"AWS_ACCESS_KEY_ID=" + accessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + secretAccessKey,
		"AWS_SESSION_TOKEN=",
		"AWS_PROFILE=",
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		// A CA bundle means nothing to the plain-HTTP loopback endpoint.
		"AWS_CA_BUNDLE=",
	}
}

// ControllerArgs are the karp controller flags for the Sim's cluster: the
// AWS provider, the cluster name (its endpoint is discovered through EKS),
// the interruption queue, and AMI, alias SSM parameter and subnet
// refreshes every minute (the shortest allowed) so SSM releases and
// selector changes show quickly.
func (s *Sim) ControllerArgs() []string {
	return []string{
		"--cloud-provider=aws",
		"--cluster-name=" + s.opts.ClusterName,
		"--interruption-queue=" + s.QueueName(),
		"--ami-refresh-interval=1m",
		"--subnet-refresh-interval=1m",
		"--ssm-alias-cache-ttl=1m",
	}
}
