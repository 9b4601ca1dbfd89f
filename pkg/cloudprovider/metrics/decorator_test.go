package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	cpmetrics "github.com/karp-autoscaler/karp/pkg/cloudprovider/metrics"
	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestDecoratorCountsErrorsByKind(t *testing.T) {
	cp := cpmetrics.Decorate(fake.New())
	ctx := metrics.WithController(t.Context(), "test.controller")
	labels := prometheus.Labels{
		metrics.ControllerLabel: "test.controller", metrics.MethodLabel: "Get",
		metrics.ProviderLabel: "fake", metrics.ErrorLabel: metrics.ErrorNodeClaimNotFound,
	}
	before := testutil.ToFloat64(metrics.CloudProviderErrorsTotal.With(labels))
	if _, err := cp.Get(ctx, "fake://missing"); err == nil {
		t.Fatal("Get of a missing instance succeeded")
	}
	if got := testutil.ToFloat64(metrics.CloudProviderErrorsTotal.With(labels)) - before; got != 1 {
		t.Errorf("errors_total{error=NodeClaimNotFoundError} grew by %v, want 1", got)
	}

	created := prometheus.Labels{metrics.ControllerLabel: "test.controller", metrics.MethodLabel: "Create", metrics.ProviderLabel: "fake"}
	countBefore := sampleCount(t, created)
	if _, err := cp.Create(ctx, test.MakeNodeClaim("ok").Obj()); err != nil {
		t.Fatal(err)
	}
	if got := sampleCount(t, created) - countBefore; got != 1 {
		t.Errorf("Create durations observed: %d, want 1", got)
	}
}

func sampleCount(t *testing.T, labels prometheus.Labels) uint64 {
	t.Helper()
	var m dto.Metric
	if err := metrics.CloudProviderDurationSeconds.With(labels).(prometheus.Histogram).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

func TestDecoratorPublishesOfferingPrices(t *testing.T) {
	inner := fake.New()
	cp := cpmetrics.Decorate(inner)
	types, err := cp.GetInstanceTypes(t.Context(), &karpv1.NodePool{})
	if err != nil || len(types) == 0 {
		t.Fatalf("GetInstanceTypes = %d types, %v", len(types), err)
	}
	it := types[0]
	o := it.Offerings[0]
	if price, available, ok := metrics.Offerings.Get(it.Name, o.CapacityType, o.Zone); !ok || price != o.Price || !available {
		t.Errorf("offering %s/%s/%s exported as price %v available %v (reported %v), want %v and true",
			it.Name, o.CapacityType, o.Zone, price, available, ok, o.Price)
	}
	// What a scrape sees: upstream's names and labels, one sample per
	// offering and metric.
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.Offerings)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"karpenter_cloudprovider_instance_type_offering_price_estimate": o.Price,
		"karpenter_cloudprovider_instance_type_offering_available":      1,
	}
	for _, f := range families {
		value, ok := want[f.GetName()]
		if !ok {
			continue
		}
		delete(want, f.GetName())
		found := false
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l[metrics.InstanceTypeLabel] == it.Name && l[metrics.CapacityTypeLabel] == o.CapacityType && l[metrics.ZoneLabel] == o.Zone {
				found = true
				if got := m.GetGauge().GetValue(); got != value {
					t.Errorf("%s{%v} = %v, want %v", f.GetName(), l, got, value)
				}
			}
		}
		if !found {
			t.Errorf("%s has no sample for %s/%s/%s", f.GetName(), it.Name, o.CapacityType, o.Zone)
		}
	}
	if len(want) > 0 {
		t.Errorf("metrics not exported: %v", want)
	}
	if cp.Unwrap() != inner {
		t.Error("Unwrap does not return the decorated provider")
	}
}

// TestDecoratorExportsAListOncePerInterval: the same instance type list,
// listed again (every NodeClaim's drift check lists its NodePool's), is not
// exported again until republishAfter has passed; a change the provider
// made to it in place shows then, and a new list shows at once.
func TestDecoratorExportsAListOncePerInterval(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	inner := fake.New()
	cp := cpmetrics.Decorate(inner).WithClock(clk)
	types, err := cp.GetInstanceTypes(t.Context(), &karpv1.NodePool{})
	if err != nil || len(types) == 0 || len(types[0].Offerings) == 0 {
		t.Fatalf("types %v, err %v", types, err)
	}
	it, o := types[0], types[0].Offerings[0]
	exported := func() float64 {
		t.Helper()
		price, _, ok := metrics.Offerings.Get(it.Name, o.CapacityType, o.Zone)
		if !ok {
			t.Fatalf("offering %s/%s/%s not exported", it.Name, o.CapacityType, o.Zone)
		}
		return price
	}
	first := o.Price
	o.Price = first + 1
	if _, err := cp.GetInstanceTypes(t.Context(), &karpv1.NodePool{}); err != nil {
		t.Fatal(err)
	}
	if got := exported(); got != first {
		t.Errorf("price %v right after the list was exported, want %v kept until the interval passes", got, first)
	}
	clk.Step(10 * time.Second)
	if _, err := cp.GetInstanceTypes(t.Context(), &karpv1.NodePool{}); err != nil {
		t.Fatal(err)
	}
	if got := exported(); got != first+1 {
		t.Errorf("price %v once the interval passed, want %v", got, first+1)
	}

	// Another list (a provider's refresh) is exported at once.
	other := *it
	other.Name = "refreshed-type"
	other.Offerings = []*cloudprovider.Offering{{CapacityType: o.CapacityType, Zone: o.Zone, Price: 7, Available: true}}
	inner.Reset(&other)
	if _, err := cp.GetInstanceTypes(t.Context(), &karpv1.NodePool{}); err != nil {
		t.Fatal(err)
	}
	if price, _, ok := metrics.Offerings.Get("refreshed-type", o.CapacityType, o.Zone); !ok || price != 7 {
		t.Errorf("a new list's offering exported as %v (%v), want 7 at once", price, ok)
	}
}
