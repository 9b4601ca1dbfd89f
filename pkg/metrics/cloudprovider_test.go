package metrics_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestDecoratorCountsErrorsByKind(t *testing.T) {
	cp := metrics.Decorate(fake.New())
	ctx := metrics.WithController(context.Background(), "test.controller")
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
	cp := metrics.Decorate(inner)
	types, err := cp.GetInstanceTypes(context.Background(), &karpv1.NodePool{})
	if err != nil || len(types) == 0 {
		t.Fatalf("GetInstanceTypes = %d types, %v", len(types), err)
	}
	it := types[0]
	o := it.Offerings[0]
	got := testutil.ToFloat64(metrics.InstanceTypeOfferingPriceEstimate.WithLabelValues(it.Name, o.CapacityType, o.Zone))
	if got != o.Price {
		t.Errorf("price estimate of %s/%s/%s = %v, want %v", it.Name, o.CapacityType, o.Zone, got, o.Price)
	}
	if avail := testutil.ToFloat64(metrics.InstanceTypeOfferingAvailable.WithLabelValues(it.Name, o.CapacityType, o.Zone)); avail != 1 {
		t.Errorf("offering available = %v, want 1", avail)
	}
	if cp.Unwrap() != inner {
		t.Error("Unwrap does not return the decorated provider")
	}
}

func TestRegisterIsIdempotent(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := metrics.Register(reg); err != nil {
		t.Errorf("second Register: %v", err)
	}
	metrics.NodesCreatedTotal.WithLabelValues("p", "z").Inc()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range families {
		if f.GetName() == "karpenter_nodes_created_total" {
			found = true
		}
	}
	if !found {
		t.Error("karpenter_nodes_created_total not gathered")
	}
}
