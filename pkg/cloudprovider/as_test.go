package cloudprovider_test

import (
	"testing"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
)

// decorator wraps a provider, as the metrics and leader-election
// decorators do.
type decorator struct{ cloudprovider.CloudProvider }

func (d decorator) Unwrap() cloudprovider.CloudProvider { return d.CloudProvider }

// opaque wraps a provider without offering Unwrap.
type opaque struct{ cloudprovider.CloudProvider }

// named is a capability only *fake.CloudProvider has.
type named interface{ SetAllowedCreateCalls(int) }

func TestAsFindsCapabilitiesThroughDecorators(t *testing.T) {
	inner := fake.New()
	for name, tc := range map[string]struct {
		cp   cloudprovider.CloudProvider
		want bool
	}{
		"the provider itself":       {inner, true},
		"one decorator":             {decorator{inner}, true},
		"two decorators":            {decorator{decorator{inner}}, true},
		"behind a non-unwrapper":    {decorator{opaque{inner}}, false},
		"nil":                       {nil, false},
		"a decorator around nil cp": {decorator{}, false},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := cloudprovider.As[named](tc.cp)
			if ok != tc.want {
				t.Fatalf("As found = %v, want %v", ok, tc.want)
			}
			if ok && got != named(inner) {
				t.Errorf("As returned %v, want the inner provider", got)
			}
		})
	}
}
