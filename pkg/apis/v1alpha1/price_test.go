package v1alpha1_test

import (
	"math"
	"testing"

	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
)

func TestPriceChange(t *testing.T) {
	tests := map[string]struct {
		change  string
		price   float64
		want    float64
		wantErr bool
	}{
		"absolute price replaces":         {change: "0.25", price: 1, want: 0.25},
		"absolute zero":                   {change: "0", price: 1, want: 0},
		"added amount":                    {change: "+0.5", price: 1, want: 1.5},
		"subtracted amount":               {change: "-0.25", price: 1, want: 0.75},
		"subtraction floors at zero":      {change: "-5", price: 1, want: 0},
		"percent increase":                {change: "+10%", price: 2, want: 2.2},
		"percent decrease":                {change: "-15%", price: 2, want: 1.7},
		"minus 100 percent is free":       {change: "-100%", price: 2, want: 0},
		"fractional percent":              {change: "+2.5%", price: 4, want: 4.1},
		"leading-dot amount":              {change: "+.5", price: 1, want: 1.5},
		"not a number":                    {change: "cheap", wantErr: true},
		"percent below minus 100":         {change: "-150%", wantErr: true},
		"percent without sign is refused": {change: "10%", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := karpv1alpha1.ParsePriceChange(tc.change)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParsePriceChange(%q) = %+v, want an error", tc.change, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p := got.Apply(tc.price); math.Abs(p-tc.want) > 1e-9 {
				t.Errorf("%q applied to %v = %v, want %v", tc.change, tc.price, p, tc.want)
			}
		})
	}
}
