package aws_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/test/awstest"
)

// launch creates the NodeClaim's instance and returns the NodeClaim as the
// core stores it afterwards (labels, annotations and status of the launch).
func launch(t *testing.T, w *world, nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	t.Helper()
	created, err := w.Provider.Create(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	launched := nc.DeepCopy()
	launched.Annotations, launched.Labels, launched.Status = created.Annotations, created.Labels, created.Status
	return launched
}

// reconciled stands for the nodeclass controller having resolved the
// EC2NodeClass again: edit changes the resolved status, and every
// condition the status had is stamped True at the current generation.
func reconciled(t *testing.T, name string, edit func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	t.Helper()
	ctx := t.Context()
	nodeClass := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, nodeClass); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(nodeClass)
	}
	conditions := nodeClass.StatusConditions()
	for _, c := range slices.Clone(nodeClass.Status.Conditions) {
		if c.Type != awsv1.ConditionTypeReady {
			conditions.SetTrue(c.Type)
		}
	}
	if err := env.Client.Status().Update(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	return nodeClass
}

func isDrifted(t *testing.T, p *aws.CloudProvider, nc *karpv1.NodeClaim) cloudprovider.DriftReason {
	t.Helper()
	reason, err := p.IsDrifted(t.Context(), nc)
	if err != nil {
		t.Fatalf("IsDrifted: %v", err)
	}
	return reason
}

func TestNodeClassDrift(t *testing.T) {
	ctx := t.Context()
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	w := newWorld(t)
	launched := launch(t, w, newNodeClaim("drift", nodeClass.Name))
	if reason := isDrifted(t, w.Provider, launched); reason != "" {
		t.Fatalf("fresh NodeClaim: IsDrifted = %q; want not drifted", reason)
	}
	// An older hash version is never compared.
	old := launched.DeepCopy()
	old.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = "v1"
	old.Annotations[awsv1.AnnotationEC2NodeClassHash] = "1"
	if reason := isDrifted(t, w.Provider, old); reason != "" {
		t.Errorf("other hash version: IsDrifted = %q; want not drifted", reason)
	}
	// A spec change drifts the NodeClaim at once, before the status
	// controller resolved the new spec; NodeClassDrift comes before the
	// dynamic checks.
	nodeClass.Spec.Tags = map[string]string{"team": "data"}
	if err := env.Client.Update(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	if reason := isDrifted(t, w.Provider, launched); reason != cloudprovider.NodeClassDrift {
		t.Errorf("spec changed, status not reconciled yet: IsDrifted = %q; want %s", reason, cloudprovider.NodeClassDrift)
	}
	reconciled(t, nodeClass.Name, func(nc *awsv1.EC2NodeClass) {
		nc.Status.Subnets = []awsv1.Subnet{{ID: "subnet-new", Zone: zones[0].Name, ZoneID: zones[0].ID}}
	})
	if reason := isDrifted(t, w.Provider, launched); reason != cloudprovider.NodeClassDrift {
		t.Errorf("after a spec change: IsDrifted = %q, want %s", reason, cloudprovider.NodeClassDrift)
	}
}

// amd64 is the requirement that makes the NodeClaim launch a standard
// x86 instance type, so its image is awstest.StatusAMIs' ami-amd64.
func amd64(nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	return withRequirement(nc, corev1.LabelArchStable, "amd64")
}

func amdAMI(id string) awsv1.AMI {
	return awsv1.AMI{ID: id, Name: id, Requirements: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
	}}
}

func withID(amis []awsv1.AMI, from, to string) []awsv1.AMI {
	out := slices.Clone(amis)
	for i := range out {
		if out[i].ID == from {
			out[i].ID = to
		}
	}
	return out
}

func TestAMIDrift(t *testing.T) {
	tests := map[string]struct {
		amis []awsv1.AMI
		want cloudprovider.DriftReason
	}{
		"the same AMIs": {amis: awstest.StatusAMIs},
		"a new release of the node's AMI": {
			amis: withID(awstest.StatusAMIs, "ami-amd64", "ami-amd64-v2"),
			want: aws.AMIDrift,
		},
		"other architectures' and variants' AMIs replaced": {
			amis: withID(withID(withID(awstest.StatusAMIs, "ami-arm64", "ami-arm64-v2"), "ami-nvidia", "ami-nvidia-v2"), "ami-neuron", "ami-neuron-v2"),
		},
		"an older compatible AMI added after the node's": {
			amis: append(slices.Clone(awstest.StatusAMIs), amdAMI("ami-amd64-old")),
		},
		"a compatible AMI a launch would now choose, ahead of the node's": {
			amis: append([]awsv1.AMI{amdAMI("ami-amd64-custom")}, awstest.StatusAMIs...),
			want: aws.AMIDrift,
		},
		"no AMI fits the instance type any more": {
			amis: awstest.StatusAMIs[1:2],
			want: aws.AMIDrift,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			nodeClass := createNodeClass(t, newNodeClass(nil), true)
			w := newWorld(t)
			launched := launch(t, w, amd64(newNodeClaim("ami", nodeClass.Name)))
			if launched.Status.ImageID != "ami-amd64" {
				t.Fatalf("launched image %s, want ami-amd64", launched.Status.ImageID)
			}
			reconciled(t, nodeClass.Name, func(nc *awsv1.EC2NodeClass) { nc.Status.AMIs = tc.amis })
			if got := isDrifted(t, w.Provider, launched); got != tc.want {
				t.Errorf("IsDrifted = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNetworkDrift(t *testing.T) {
	subnets := func(ids ...string) func(*awsv1.EC2NodeClass) {
		return func(nc *awsv1.EC2NodeClass) {
			nc.Status.Subnets = nil
			for i, id := range ids {
				z := zones[i%len(zones)]
				nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{ID: id, Zone: z.Name, ZoneID: z.ID})
			}
		}
	}
	groups := func(ids ...string) func(*awsv1.EC2NodeClass) {
		return func(nc *awsv1.EC2NodeClass) {
			nc.Status.SecurityGroups = nil
			for _, id := range ids {
				nc.Status.SecurityGroups = append(nc.Status.SecurityGroups, awsv1.SecurityGroup{ID: id, Name: id})
			}
		}
	}
	both := func(edits ...func(*awsv1.EC2NodeClass)) func(*awsv1.EC2NodeClass) {
		return func(nc *awsv1.EC2NodeClass) {
			for _, e := range edits {
				e(nc)
			}
		}
	}
	tests := map[string]struct {
		edit func(*awsv1.EC2NodeClass)
		want cloudprovider.DriftReason
	}{
		"nothing changed":                    {edit: func(*awsv1.EC2NodeClass) {}},
		"subnets reordered and one added":    {edit: subnets("subnet-4", "subnet-3", "subnet-2", "subnet-1")},
		"the node's subnet no longer chosen": {edit: subnets("subnet-7", "subnet-8", "subnet-9"), want: aws.SubnetDrift},
		"security group replaced":            {edit: groups("sg-test2"), want: aws.SecurityGroupDrift},
		"security group added":               {edit: groups("sg-test1", "sg-test2"), want: aws.SecurityGroupDrift},
		"security group listed twice":        {edit: groups("sg-test1", "sg-test1")},
		"security groups before subnets":     {edit: both(groups("sg-test2"), subnets("subnet-7")), want: aws.SecurityGroupDrift},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			nodeClass := createNodeClass(t, newNodeClass(nil), true)
			w := newWorld(t)
			launched := launch(t, w, newNodeClaim("net", nodeClass.Name))
			reconciled(t, nodeClass.Name, tc.edit)
			if got := isDrifted(t, w.Provider, launched); got != tc.want {
				t.Errorf("IsDrifted = %q, want %q", got, tc.want)
			}
		})
	}
}
