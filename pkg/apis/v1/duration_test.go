package v1_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

func TestNillableDurationJSON(t *testing.T) {
	tests := map[string]struct {
		in        string
		wantNever bool
		want      time.Duration
		wantOut   string
		wantErr   bool
	}{
		"Never is nil":           {in: `"Never"`, wantNever: true, wantOut: `"Never"`},
		"null is Never":          {in: `null`, wantNever: true, wantOut: `"Never"`},
		"hours":                  {in: `"720h"`, want: 720 * time.Hour, wantOut: `"720h0m0s"`},
		"zero":                   {in: `"0s"`, want: 0, wantOut: `"0s"`},
		"compound":               {in: `"1h30m"`, want: 90 * time.Minute, wantOut: `"1h30m0s"`},
		"not a duration":         {in: `"soon"`, wantErr: true},
		"number is not accepted": {in: `30`, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var d karpv1.NillableDuration
			err := json.Unmarshal([]byte(tc.in), &d)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Unmarshal(%s) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if d.IsNever() != tc.wantNever {
				t.Fatalf("IsNever() = %v, want %v", d.IsNever(), tc.wantNever)
			}
			if !tc.wantNever && *d.Duration != tc.want {
				t.Errorf("Duration = %v, want %v", *d.Duration, tc.want)
			}
			out, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.wantOut {
				t.Errorf("Marshal() = %s, want %s", out, tc.wantOut)
			}
		})
	}
}

// The unstructured converter (used by server-side apply and dynamic
// clients) must spell durations the way JSON does.
func TestNillableDurationUnstructuredRoundTrip(t *testing.T) {
	in := &karpv1.NodePool{}
	in.Spec.Template.Spec.ExpireAfter = karpv1.NillableDuration{}
	in.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(30 * time.Second)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	if err != nil {
		t.Fatal(err)
	}
	spec := u["spec"].(map[string]interface{})
	gotExpire := spec["template"].(map[string]interface{})["spec"].(map[string]interface{})["expireAfter"]
	gotConsolidate := spec["disruption"].(map[string]interface{})["consolidateAfter"]
	if gotExpire != "Never" || gotConsolidate != "30s" {
		t.Fatalf("unstructured expireAfter=%v consolidateAfter=%v, want Never and 30s", gotExpire, gotConsolidate)
	}
	out := &karpv1.NodePool{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in.Spec, out.Spec); diff != "" {
		t.Errorf("round trip (-want,+got):\n%s", diff)
	}
}

func TestParseNillableDuration(t *testing.T) {
	if d := karpv1.MustParseNillableDuration("Never"); !d.IsNever() || d.String() != "Never" {
		t.Errorf("Never parsed as %v", d)
	}
	if d := karpv1.MustParseNillableDuration("5m"); d.IsNever() || *d.Duration != 5*time.Minute {
		t.Errorf("5m parsed as %v", d)
	}
	if _, err := karpv1.ParseNillableDuration("5 minutes"); err == nil {
		t.Error("ParseNillableDuration(\"5 minutes\") succeeded, want error")
	}
}
