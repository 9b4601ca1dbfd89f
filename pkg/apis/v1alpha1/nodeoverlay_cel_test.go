package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestNodeOverlayValidation(t *testing.T) {
	in := corev1.NodeSelectorOpIn
	overlay := func() *test.NodeOverlayWrapper { return test.MakeNodeOverlay("overlay") }
	many := overlay()
	for i := 0; i < 101; i++ {
		many.Requirement(fmt.Sprintf("example.com/key-%d", i), corev1.NodeSelectorOpExists)
	}
	tests := map[string]struct {
		overlay *karpv1alpha1.NodeOverlay
		// wantErr is a substring of the API server's message; "" accepts.
		wantErr string
	}{
		"percentage increase":        {overlay: overlay().PriceAdjustment("+10%").Obj()},
		"percentage decrease":        {overlay: overlay().PriceAdjustment("-15.5%").Obj()},
		"minus 100 percent":          {overlay: overlay().PriceAdjustment("-100%").Obj()},
		"signed amounts":             {overlay: overlay().PriceAdjustment("-0.5").Obj()},
		"absolute price":             {overlay: overlay().Price("0.25").Obj()},
		"extended resource":          {overlay: overlay().Capacity(corev1.ResourceList{"example.com/widget": resource.MustParse("4")}).Obj()},
		"nodepool and capacity type": {overlay: overlay().Requirement("karpenter.sh/nodepool", in, "default").Requirement("karpenter.sh/capacity-type", in, "spot").Price("1").Obj()},
		"weight bounds":              {overlay: overlay().Weight(10000).Obj()},
		"price and adjustment":       {overlay: overlay().Price("1").PriceAdjustment("+1").Obj(), wantErr: "cannot set both 'price' and 'priceAdjustment'"},
		"unsigned percentage":        {overlay: overlay().PriceAdjustment("10%").Obj(), wantErr: "spec.priceAdjustment"},
		"below minus 100 percent":    {overlay: overlay().PriceAdjustment("-101%").Obj(), wantErr: "spec.priceAdjustment"},
		"negative price":             {overlay: overlay().Price("-1").Obj(), wantErr: "spec.price"},
		"cpu capacity":               {overlay: overlay().Capacity(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}).Obj(), wantErr: "invalid resource restricted"},
		"pods capacity":              {overlay: overlay().Capacity(corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}).Obj(), wantErr: "invalid resource restricted"},
		"weight zero":                {overlay: overlay().Weight(0).Obj(), wantErr: "spec.weight"},
		"weight above 10000":         {overlay: overlay().Weight(10001).Obj(), wantErr: "spec.weight"},
		"In without values":          {overlay: overlay().Requirement("example.com/team", in).Obj(), wantErr: "requirements with operator 'In' must have a value defined"},
		"NotIn without values":       {overlay: overlay().Requirement("example.com/team", corev1.NodeSelectorOpNotIn).Obj(), wantErr: "requirements with operator 'NotIn' must have a value defined"},
		"Gt with two values":         {overlay: overlay().Requirement("example.com/size", corev1.NodeSelectorOpGt, "1", "2").Obj(), wantErr: "must have a single positive integer value"},
		"Lt negative":                {overlay: overlay().Requirement("example.com/size", corev1.NodeSelectorOpLt, "-1").Obj(), wantErr: "must have a single positive integer value"},
		"unknown operator":           {overlay: overlay().Requirement("example.com/size", "Near", "1").Obj(), wantErr: "spec.requirements[0].operator"},
		"karpenter.sh domain":        {overlay: overlay().Requirement("karpenter.sh/custom", in, "x").Obj(), wantErr: `label domain "karpenter.sh" is restricted`},
		"karpenter.sh subdomain":     {overlay: overlay().Requirement("sub.karpenter.sh/custom", in, "x").Obj(), wantErr: `label domain "karpenter.sh" is restricted`},
		"hostname":                   {overlay: overlay().Requirement("kubernetes.io/hostname", in, "x").Obj(), wantErr: `label "kubernetes.io/hostname" is restricted`},
		"bad key":                    {overlay: overlay().Requirement("-bad", in, "x").Obj(), wantErr: "spec.requirements[0].key"},
		"bad value":                  {overlay: overlay().Requirement("example.com/team", in, "bad value").Obj(), wantErr: "spec.requirements[0].values[0]"},
		"more than 100 requirements": {overlay: many.Obj(), wantErr: "spec.requirements"},
		"requirements are required":  {overlay: func() *karpv1alpha1.NodeOverlay { o := overlay().Obj(); o.Spec.Requirements = nil; return o }(), wantErr: "spec.requirements"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			obj := tc.overlay.DeepCopy()
			obj.GenerateName, obj.Name = "overlay-", ""
			err := kubeClient.Create(ctx, obj)
			if err == nil {
				t.Cleanup(func() { _ = kubeClient.Delete(ctx, obj) })
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("create refused: %v", err)
				}
				return
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("create error = %v, want Invalid containing %q", err, tc.wantErr)
			}
		})
	}
}

// RuntimeValidate catches what the schema lets through.
func TestNodeOverlayRuntimeValidate(t *testing.T) {
	tests := map[string]struct {
		overlay *karpv1alpha1.NodeOverlay
		wantErr string
	}{
		"valid":                  {overlay: test.MakeNodeOverlay("o").Requirement("example.com/team", corev1.NodeSelectorOpIn, "a").PriceAdjustment("+1%").Obj()},
		"Exists with values":     {overlay: test.MakeNodeOverlay("o").Requirement("example.com/team", corev1.NodeSelectorOpExists, "a").Obj(), wantErr: "requirements[0]"},
		"memory capacity":        {overlay: test.MakeNodeOverlay("o").Capacity(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}).Obj(), wantErr: "capacity: memory"},
		"price and adjustment":   {overlay: test.MakeNodeOverlay("o").Price("1").PriceAdjustment("+1").Obj(), wantErr: "both"},
		"unparsable price":       {overlay: test.MakeNodeOverlay("o").Price("one").Obj(), wantErr: "price"},
		"provider label allowed": {overlay: test.MakeNodeOverlay("o").Requirement("example.com/size", corev1.NodeSelectorOpGt, "2").Obj()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.overlay.RuntimeValidate(sets.New[string]())
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("RuntimeValidate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("RuntimeValidate = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
