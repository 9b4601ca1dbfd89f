package nodeclass_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// myCluster is the AWS account the manifests in testdata were written for:
// subnets and groups tagged for discovery by cluster my-cluster, the IDs
// and names the manifests quote, the EKS AMIs of their aliases, the
// organisation's golden AMIs, the node role and its instance profile.
func myCluster(t *testing.T, w *world) {
	t.Helper()
	tags := func(name string) map[string]string {
		return map[string]string{"karpenter.sh/discovery": "my-cluster", "Name": name}
	}
	w.ec2.AddSubnets(
		fake.NewSubnet("subnet-0a1b2c3d4e5f67890", "us-west-2a", "usw2-az1", 250, tags("my-cluster-Private-a")),
		fake.NewSubnet("subnet-0a1b2c3d4e5f67891", "us-west-2b", "usw2-az2", 250, tags("my-cluster-Private-b")),
		fake.NewSubnet("subnet-0a1b2c3d4e5f67892", "us-west-2c", "usw2-az3", 250, tags("my-cluster-Public-c")),
	)
	w.ec2.AddSecurityGroups(
		fake.NewSecurityGroup("sg-0123456789abcdef0", "eks-cluster-sg-my-cluster", tags("cluster")),
		fake.NewSecurityGroup("sg-0123456789abcdef1", "nodes", tags("nodes")),
	)
	released := h.Clock.Now().Add(-24 * time.Hour)
	for _, alias := range []string{"bottlerocket@v1.20.3", "al2023@v20240807", "windows2022@latest"} {
		fake.PublishAMI(w.ec2, w.ssm, alias, w.k8s, released)
	}
	golden := fake.NewImage("ami-0golden0000000001", "my-golden-al2023-2030", ec2types.ArchitectureValuesX8664, released, map[string]string{"ecs:image": "golden"})
	fromSSM := fake.NewImage("ami-0fromssm00000001", "eks-node-arm", ec2types.ArchitectureValuesArm64, released, nil)
	custom := fake.NewImage("ami-0123456789abcdef0", "custom", ec2types.ArchitectureValuesX8664, released, nil)
	w.ec2.AddImages(golden, fromSSM, custom)
	w.ssm.PutParameter("/my-org/amis/eks-node", "ami-0fromssm00000001")
	w.iam.AddInstanceProfile("KarpenterNodeInstanceProfile-my-cluster", "KarpenterNodeRole-my-cluster")
	w.ec2.AddCapacityReservations(fake.NewCapacityReservation("cr-0123456789abcdef0", "p5.48xlarge", "us-west-2a", 1, nil))
}

func manifests(t *testing.T) []*awsv1.EC2NodeClass {
	t.Helper()
	raw, err := os.ReadFile("testdata/ec2nodeclasses.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []*awsv1.EC2NodeClass
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		nc := &awsv1.EC2NodeClass{}
		if err := decoder.Decode(nc); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, nc)
	}
}

func TestUsersManifestsBecomeReady(t *testing.T) {
	w := newWorld(t)
	myCluster(t, w)
	all := manifests(t)
	if len(all) < 6 {
		t.Fatalf("read %d manifests, want the 6 of testdata", len(all))
	}
	for _, nc := range all {
		t.Run(nc.Name, func(t *testing.T) {
			create(t, nc)
			_, got := w.mustReconcile(t, nc.Name)
			for _, ct := range allConditions {
				if c := condition(t, got, ct); c.Status != metav1.ConditionTrue {
					t.Errorf("%s %s (%s: %s), want True", ct, c.Status, c.Reason, c.Message)
				}
			}
			if len(got.Status.Subnets) == 0 || len(got.Status.SecurityGroups) == 0 || len(got.Status.AMIs) == 0 || got.Status.InstanceProfile == "" {
				t.Errorf("status incomplete: %d subnets, %d groups, %d AMIs, profile %q",
					len(got.Status.Subnets), len(got.Status.SecurityGroups), len(got.Status.AMIs), got.Status.InstanceProfile)
			}
		})
	}
}

// The manifests' selectors resolve to what their users meant.
func TestUsersManifestsResolveAsWritten(t *testing.T) {
	w := newWorld(t)
	myCluster(t, w)
	byName := map[string]*awsv1.EC2NodeClass{}
	for _, nc := range manifests(t) {
		nc.Name = "resolve-" + nc.Name
		byName[nc.Name] = nc
		create(t, nc)
	}
	status := func(name string) awsv1.EC2NodeClassStatus {
		t.Helper()
		_, got := w.mustReconcile(t, name)
		return got.Status
	}

	// Name: "*Private*" matches the two private subnets only.
	if got := status("resolve-al2023-tuned"); len(got.Subnets) != 2 || len(got.CapacityReservations) != 1 {
		t.Errorf("al2023-tuned: subnets %v, reservations %v; want the 2 private subnets and cr-0123456789abcdef0", got.Subnets, got.CapacityReservations)
	}
	// A role given as an ARN is attached by name to the NodeClass's own
	// profile.
	wantProfile := instanceprofile.Name(clusterName, region, "resolve-custom-ami")
	if got := status("resolve-custom-ami"); got.InstanceProfile != wantProfile {
		t.Errorf("custom-ami: instance profile %q, want %q", got.InstanceProfile, wantProfile)
	}
	if p, _ := w.iam.InstanceProfile(wantProfile); len(p.Roles) != 1 || *p.Roles[0].RoleName != "KarpenterNodeRole-my-cluster" {
		t.Errorf("custom-ami: profile roles %+v, want KarpenterNodeRole-my-cluster", p.Roles)
	}
	// name+owner, tags and ssmParameter terms: the newest per architecture.
	got := status("resolve-custom-ami")
	ids := map[string]bool{}
	for _, a := range got.AMIs {
		ids[a.ID] = true
	}
	if len(got.AMIs) != 2 || !ids["ami-0golden0000000001"] || !ids["ami-0fromssm00000001"] {
		t.Errorf("custom-ami AMIs %v, want the golden amd64 and the SSM-named arm64 image", amiIDs(got.AMIs))
	}
	// The Windows alias serves Windows instance types only.
	for _, a := range status("resolve-windows").AMIs {
		if raw, _ := json.Marshal(a.Requirements); !contains(string(raw), `"key":"kubernetes.io/os"`, `"windows"`, `"node.kubernetes.io/windows-build"`, `"10.0.20348"`) {
			t.Errorf("windows AMI %s requirements %v", a.ID, a.Requirements)
		}
	}
}
