package simulate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/manifest"
)

func TestWriteTable(t *testing.T) {
	rep := simulateFiles(t, seed(t, "nodepool-gpu.yaml"), seed(t, "deployment-inflate-gpu.yaml"), testdata("gpu-without-toleration.yaml"))
	var out bytes.Buffer
	if err := Write(&out, rep, OutputTable); err != nil {
		t.Fatal(err)
	}
	want := `NODEPOOL  INSTANCE TYPE  ZONE        CAPACITY   $/HOUR  PODS  CPU REQ/ALLOC  MEMORY REQ/ALLOC  DAEMONSET OVERHEAD
gpu       p3.8xlarge     us-east-1a  on-demand  12.24   3     3/31.85        12.0Gi/222.8Gi    -

Total: 1 node, 3 pods, $12.24/hour, $8935.20/month

1 pod would stay pending:
  default/gpu-no-toleration
    why (UnschedulableAndUnresolvable):
      NodePool gpu: taint nvidia.com/gpu=true:NoSchedule not tolerated [TaintNotTolerated]
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("table (-want,+got):\n%s", diff)
	}
}

func TestWriteTableGroupsPendingPods(t *testing.T) {
	rep := &Report{Unschedulable: []Unschedulable{}}
	for i := 0; i < 12; i++ {
		rep.Unschedulable = append(rep.Unschedulable, Unschedulable{Pod: "ns/p" + string(rune('a'+i)), Code: "Unschedulable", Reasons: []string{"NodePool x: limit"}})
	}
	rep.Unschedulable = append(rep.Unschedulable, Unschedulable{Pod: "ns/other", Code: "UnschedulableAndUnresolvable", Reasons: []string{"NodePool x: taint"}})
	var out bytes.Buffer
	if err := WriteTable(&out, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"13 pods would stay pending:", "  ns/pj\n  ... and 2 more pods with the same reasons", "      NodePool x: limit\n  ns/other\n    why (UnschedulableAndUnresolvable):\n      NodePool x: taint\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table does not contain %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "ns/pk") {
		t.Errorf("table lists more than 10 pods of a group:\n%s", out.String())
	}
}

func TestWriteJSON(t *testing.T) {
	rep := simulateFiles(t, seed(t, "nodepool-gpu.yaml"), seed(t, "deployment-inflate-gpu.yaml"), testdata("gpu-without-toleration.yaml"))
	var out bytes.Buffer
	if err := Write(&out, rep, OutputJSON); err != nil {
		t.Fatal(err)
	}
	var got struct {
		NodeClaims []struct {
			NodePool, InstanceType, Zone, CapacityType string
			PricePerHour                               float64
			Pods                                       []string
		}
		Unschedulable []struct {
			Pod     string
			Reasons []string
		}
		TotalPricePerHour float64
	}
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.NodeClaims) != 1 || got.NodeClaims[0].NodePool != "gpu" || got.NodeClaims[0].InstanceType != "p3.8xlarge" ||
		got.NodeClaims[0].Zone != "us-east-1a" || got.NodeClaims[0].CapacityType != "on-demand" || got.NodeClaims[0].PricePerHour != 12.24 ||
		len(got.NodeClaims[0].Pods) != 3 || !strings.HasPrefix(got.NodeClaims[0].Pods[0], "default/inflate-gpu-") {
		t.Errorf("nodeClaims = %+v", got.NodeClaims)
	}
	if len(got.Unschedulable) != 1 || got.Unschedulable[0].Pod != "default/gpu-no-toleration" || len(got.Unschedulable[0].Reasons) != 1 {
		t.Errorf("unschedulable = %+v", got.Unschedulable)
	}
	if got.TotalPricePerHour != 12.24 {
		t.Errorf("totalPricePerHour = %v, want 12.24", got.TotalPricePerHour)
	}
}

// TestWriteYAML decodes the printed NodeClaims back and checks they are
// what karp's provisioner would create.
func TestWriteYAML(t *testing.T) {
	rep := simulateFiles(t, seed(t, "nodepool-generalcompute.yaml"), seed(t, "deployment-my-team.yaml"), seed(t, "daemonset-all-nodes.yaml"))
	var out bytes.Buffer
	if err := Write(&out, rep, OutputYAML); err != nil {
		t.Fatal(err)
	}
	var claims []karpv1.NodeClaim
	for _, doc := range strings.Split(out.String(), "---\n")[1:] {
		if strings.Contains(doc, "\n  name: ") {
			t.Errorf("NodeClaim has a fixed name, want generateName only:\n%s", doc)
		}
		// Each NodeClaim must pass the NodeClaim CRD's schema and CEL rules.
		admitted, err := manifest.Admit([]byte(doc))
		if err != nil {
			t.Fatalf("NodeClaim rejected by its CRD: %v\n%s", err, doc)
		}
		var nc karpv1.NodeClaim
		if err := json.Unmarshal(admitted, &nc); err != nil {
			t.Fatal(err)
		}
		claims = append(claims, nc)
	}
	if len(claims) != rep.TotalNodes || len(claims) == 0 {
		t.Fatalf("decoded %d NodeClaims, report has %d", len(claims), rep.TotalNodes)
	}
	for i, nc := range claims {
		if nc.Kind != "NodeClaim" || nc.APIVersion != "karpenter.sh/v1" || nc.GenerateName != "generalcompute-" || !strings.HasPrefix(nc.Name, "generalcompute-") {
			t.Errorf("NodeClaim %d: %s %s generateName %q name %q", i, nc.APIVersion, nc.Kind, nc.GenerateName, nc.Name)
		}
		wantLabels := map[string]string{"karpenter.sh/nodepool": "generalcompute", "billing-team": "my-team", "karpenter.kwok.sh/kwoknodeclass": "default"}
		if diff := cmp.Diff(wantLabels, nc.Labels); diff != "" {
			t.Errorf("NodeClaim %d labels (-want,+got):\n%s", i, diff)
		}
		if len(nc.OwnerReferences) != 1 || nc.OwnerReferences[0].Kind != "NodePool" || nc.OwnerReferences[0].Name != "generalcompute" || nc.OwnerReferences[0].UID == "" {
			t.Errorf("NodeClaim %d owners = %+v", i, nc.OwnerReferences)
		}
		reqs := map[string][]string{}
		for _, r := range nc.Spec.Requirements {
			if r.Operator == corev1.NodeSelectorOpIn {
				reqs[r.Key] = r.Values
			}
		}
		if diff := cmp.Diff(rep.NodeClaims[i].InstanceTypeOptions, reqs[corev1.LabelInstanceTypeStable], sortedOpt()); diff != "" {
			t.Errorf("NodeClaim %d instance-type requirement (-report,+yaml):\n%s", i, diff)
		}
		if diff := cmp.Diff([]string{"on-demand"}, reqs[karpv1.CapacityTypeLabelKey]); diff != "" {
			t.Errorf("NodeClaim %d capacity-type requirement (-want,+got):\n%s", i, diff)
		}
		if !equalResources(rep.NodeClaims[i].Requests, nc.Spec.Resources.Requests) {
			t.Errorf("NodeClaim %d requests %v, report says %v", i, nc.Spec.Resources.Requests, rep.NodeClaims[i].Requests)
		}
		if nc.Spec.NodeClassRef == nil || nc.Spec.NodeClassRef.Name != "default" || nc.Spec.ExpireAfter.Duration != nil {
			t.Errorf("NodeClaim %d nodeClassRef %+v expireAfter %v, want default and Never", i, nc.Spec.NodeClassRef, nc.Spec.ExpireAfter)
		}
	}
}

func sortedOpt() cmp.Option {
	return cmp.Transformer("sorted", func(in []string) []string {
		out := append([]string(nil), in...)
		for i := range out {
			for j := i + 1; j < len(out); j++ {
				if out[j] < out[i] {
					out[i], out[j] = out[j], out[i]
				}
			}
		}
		return out
	})
}

func TestWriteUnknownFormat(t *testing.T) {
	if err := Write(&bytes.Buffer{}, &Report{}, "xml"); err == nil {
		t.Error("writing xml succeeded")
	}
}
