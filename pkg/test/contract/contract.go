package contract

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// Subject is a provider under test and a way to make NodeClaims it can launch.
type Subject struct {
	Provider cloudprovider.CloudProvider
	// NodeClaim returns a NodeClaim with the given name, a fresh UID, the
	// label karpenter.sh/nodepool=default, no requirements and a
	// nodeClassRef to a NodeClass the provider can launch with.
	NodeClaim func(name string) *karpv1.NodeClaim
	// NodePool, when set, returns the NodePool GetInstanceTypes is asked
	// about (providers whose instance types depend on the NodePool's
	// NodeClass); nil means a NodePool named default without a nodeClassRef.
	NodePool func() *karpv1.NodePool
}

func (s Subject) nodePool() *karpv1.NodePool {
	if s.NodePool != nil {
		return s.NodePool()
	}
	return &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
}

// Behaviour is one entry of the contract table.
type Behaviour struct {
	Name string
	Test func(t *testing.T, ctx context.Context, s Subject)
}

// Behaviours is the contract, in the order Run runs it.
var Behaviours = []Behaviour{
	// The provider names itself and the NodeClass kinds it reads.
	{"identifies itself", identifiesItself},
	// Every instance type is launchable somewhere and describes itself.
	{"instance types have offerings", instanceTypesHaveOfferings},
	// Create returns the providerID, labels, capacity and allocatable.
	{"create hydrates the nodeclaim", createHydrates},
	// Create honours zone and capacity-type requirements.
	{"create honours requirements", createHonoursRequirements},
	// Every provider launches the best candidate LaunchCandidates ranks.
	{"create launches the cheapest compatible offering", createLaunchesCheapest},
	// A retried Create does not launch a second instance.
	{"create is idempotent", createIsIdempotent},
	// Nothing satisfies the request: InsufficientCapacityError.
	{"impossible requests are insufficient capacity", impossibleIsInsufficientCapacity},
	// Get finds what Create launched, by providerID.
	{"get returns the created instance", getReturnsCreated},
	// Get of an unknown providerID: NodeClaimNotFoundError.
	{"get of an unknown instance is not found", getUnknownIsNotFound},
	// Delete terminates; afterwards Get, Delete and List agree it is gone.
	{"delete terminates the instance", deleteTerminates},
	// List includes every created instance.
	{"list includes created instances", listIncludesCreated},
	// Concurrent creates of different NodeClaims launch different instances.
	{"concurrent creates launch distinct instances", concurrentCreates},
	// A freshly launched NodeClaim has not drifted.
	{"fresh instances are not drifted", freshNotDrifted},
	// Repair policies name a condition, a status and a positive toleration.
	{"repair policies are well formed", repairPoliciesWellFormed},
}

// Run runs every behaviour as a subtest, each with a fresh Subject.
func Run(t *testing.T, newSubject func(t *testing.T) Subject) {
	for _, b := range Behaviours {
		t.Run(b.Name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			b.Test(t, ctx, newSubject(t))
		})
	}
}

func withRequests(nc *karpv1.NodeClaim, cpu, memory string) *karpv1.NodeClaim {
	nc.Spec.Resources.Requests = corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
	}
	return nc
}

func withRequirement(nc *karpv1.NodeClaim, key string, op corev1.NodeSelectorOperator, values ...string) *karpv1.NodeClaim {
	nc.Spec.Requirements = append(nc.Spec.Requirements,
		karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values})
	return nc
}

func mustCreate(t *testing.T, ctx context.Context, s Subject, nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	t.Helper()
	created, err := s.Provider.Create(ctx, nc)
	if err != nil {
		t.Fatalf("Create(%s): %v", nc.Name, err)
	}
	if created.Status.ProviderID == "" {
		t.Fatalf("Create(%s) returned no providerID", nc.Name)
	}
	return created
}

func mustInstanceTypes(t *testing.T, ctx context.Context, s Subject) []*cloudprovider.InstanceType {
	t.Helper()
	types, err := s.Provider.GetInstanceTypes(ctx, s.nodePool())
	if err != nil {
		t.Fatalf("GetInstanceTypes: %v", err)
	}
	if len(types) == 0 {
		t.Fatal("GetInstanceTypes returned no instance types")
	}
	return types
}

func findType(types []*cloudprovider.InstanceType, name string) *cloudprovider.InstanceType {
	for _, it := range types {
		if it.Name == name {
			return it
		}
	}
	return nil
}

func listed(t *testing.T, ctx context.Context, s Subject, providerID string) int {
	t.Helper()
	all, err := s.Provider.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	n := 0
	for _, nc := range all {
		if nc.Status.ProviderID == providerID {
			n++
		}
	}
	return n
}
