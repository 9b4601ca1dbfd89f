package parity_test

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers"
	metricsstatus "github.com/karp-autoscaler/karp/pkg/metrics/status"
	"github.com/karp-autoscaler/karp/pkg/operator"
	"github.com/karp-autoscaler/karp/pkg/options"
)

// recorder is a prometheus registry that also keeps every collector
// registered with it, so the test can Describe collectors that have no
// series yet (Gather lists only families with series).
type recorder struct {
	*prometheus.Registry
	mu         sync.Mutex
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// ec2Provider is the fake provider reporting EC2NodeClass as its NodeClass
// kind, as karp's AWS provider does, so the status-condition metrics carry
// the NodeClass label upstream's AWS build carries.
type ec2Provider struct{ *fake.CloudProvider }

func (ec2Provider) GetSupportedNodeClasses() []cloudprovider.NodeClass {
	return []cloudprovider.NodeClass{&awsv1.EC2NodeClass{}}
}

// karpMetrics builds the operator and registers karp's whole controller
// list (with every optional controller on) against a discovery-only API
// server (nothing starts), plus the AWS provider's metrics, and
// returns the label names of every metric by name.
func karpMetrics(t *testing.T) map[string][]string {
	t.Helper()
	rec := &recorder{Registry: prometheus.NewRegistry()}
	// controller-runtime's registry is where karp's controllers register;
	// this test binary replaces it before anything registers.
	crmetrics.Registry = rec

	opts, err := options.Parse(flag.NewFlagSet("parity", flag.ContinueOnError), []string{"--disable-leader-election",
		"--feature-gates=StaticCapacity=true,ProvisioningRequest=true,CapacityBuffer=true,NodeRepair=true,NodeOverlay=true"})
	if err != nil {
		t.Fatal(err)
	}
	srv := discoveryServer(t, operator.NewScheme())
	op, err := operator.New(t.Context(), &rest.Config{Host: srv.URL}, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The AWS provider's EC2NodeClass status metrics, registered as its
	// controller list does (building the provider needs AWS clients).
	ec2NodeClasses := metricsstatus.NewRegistrar(crmetrics.Registry, op.Clock, op.Recorder, metricsstatus.EC2NodeClasses())
	if err := op.Register(t.Context(), append(controllers.NewControllers(op.Deps(ec2Provider{fake.New()})), ec2NodeClasses)...); err != nil {
		t.Fatal(err)
	}
	// The AWS provider's metrics, as its constructor registers them.
	for _, err := range []error{instance.Register(rec), launchtemplate.Register(rec), interruption.RegisterMetrics(rec),
		rec.Register(instancetype.NewCollector(nil))} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return describe(t, rec.collectors)
}

// descPattern reads prometheus.Desc.String(), the only public view of a
// Desc's name and variable labels.
var descPattern = regexp.MustCompile(`^Desc\{fqName: "([^"]*)", help: .*, constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)

func describe(t *testing.T, collectors []prometheus.Collector) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, c := range collectors {
		ch := make(chan *prometheus.Desc, 64)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := descPattern.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("unreadable descriptor %s", d)
			}
			var labels []string
			for _, part := range []string{m[2], m[3]} {
				for _, l := range strings.Split(part, ",") {
					if l = strings.TrimSpace(l); l != "" {
						labels = append(labels, strings.SplitN(l, "=", 2)[0])
					}
				}
			}
			if prev, ok := out[m[1]]; ok && fmt.Sprint(prev) != fmt.Sprint(labels) {
				t.Fatalf("%s described twice with labels %v and %v", m[1], prev, labels)
			}
			out[m[1]] = labels
		}
	}
	return out
}
