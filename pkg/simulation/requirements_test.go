package simulation

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/catalog"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func onePod(build func(*test.PodWrapper) *test.PodWrapper) []*corev1.Pod {
	return []*corev1.Pod{build(test.MakePod("p").Requests("cpu", "1")).Obj()}
}

func TestSolveRequirements(t *testing.T) {
	zoneIs := func(z string) map[string]string { return map[string]string{"p": z} }
	runCases(t, map[string]solveCase{
		"nodeSelector on arch": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeSelector(map[string]string{corev1.LabelArchStable: "arm64"})
			}),
			onType: map[string]string{"p": "arm-medium"},
		},
		"nodeSelector on zone": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeSelector(map[string]string{corev1.LabelTopologyZone: zoneB})
			}),
			inZone: zoneIs(zoneB),
		},
		"deprecated zone label is normalized": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeSelector(map[string]string{"failure-domain.beta.kubernetes.io/zone": zoneC})
			}),
			inZone: zoneIs(zoneC),
		},
		"nodeSelector on a label the NodePool does not define": {
			pods:    onePod(func(w *test.PodWrapper) *test.PodWrapper { return w.NodeSelector(map[string]string{"team": "x"}) }),
			reasons: map[string]string{"p": "NodePool default: incompatible requirements: label team is not defined by the NodePool (requires team In [x]) [IncompatibleRequirements]"},
		},
		"nodeSelector on a template label": {
			pools:  []*NodePool{withTypes(test.MakeNodePool("default").Labels(map[string]string{"team": "x"}).Obj())},
			pods:   onePod(func(w *test.PodWrapper) *test.PodWrapper { return w.NodeSelector(map[string]string{"team": "x"}) }),
			claims: n(1),
		},
		"nodeSelector on a template label with another value": {
			pools:   []*NodePool{withTypes(test.MakeNodePool("default").Labels(map[string]string{"team": "x"}).Obj())},
			pods:    onePod(func(w *test.PodWrapper) *test.PodWrapper { return w.NodeSelector(map[string]string{"team": "y"}) }),
			reasons: map[string]string{"p": "NodePool default: incompatible requirements: requires team In [y], NodePool allows team In [x] [IncompatibleRequirements]"},
		},
		"a template requirement narrows to the pod's value": {
			pools: []*NodePool{withTypes(test.MakeNodePool("default").Requirement("team", corev1.NodeSelectorOpIn, "x", "y").Obj())},
			pods:  onePod(func(w *test.PodWrapper) *test.PodWrapper { return w.NodeSelector(map[string]string{"team": "y"}) }),
			check: func(t *testing.T, res *Result) {
				if got := res.NodeClaims[0].Requirements.Get("team").String(); got != "team In [y]" {
					t.Fatalf("team requirement %q", got)
				}
			},
		},
		"the second required term is used when the first is impossible": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeAffinityTerm(req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "s390x")).
					NodeAffinityTerm(req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"))
			}),
			onType: map[string]string{"p": "arm-medium"},
		},
		"NotIn on the instance type": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeAffinityTerm(req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpNotIn, "general-small", "arm-medium"))
			}),
			onType: map[string]string{"p": "general-medium"},
		},
		"DoesNotExist on a label nobody defines": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeAffinityTerm(req("team", corev1.NodeSelectorOpDoesNotExist))
			}),
			claims: n(1),
		},
		"Exists on a label nobody defines": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeAffinityTerm(req("team", corev1.NodeSelectorOpExists))
			}),
			reasons: map[string]string{"p": "NodePool default: incompatible requirements: label team is not defined by the NodePool (requires team Exists) [IncompatibleRequirements]"},
		},
		"Gt on an instance label": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeAffinityTerm(req(labelCPU, corev1.NodeSelectorOpGt, "4"))
			}),
			onType: map[string]string{"p": "general-large"},
		},
		"Lt on an instance label": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeAffinityTerm(req(labelCPU, corev1.NodeSelectorOpLt, "3"))
			}),
			onType: map[string]string{"p": "general-small"},
		},
		"Gte and Lte on an instance label": {
			pools: []*NodePool{withTypes(test.MakeNodePool("default").Requirement(labelCPU, karpv1.NodeSelectorOpGte, "4").
				Requirement(labelCPU, karpv1.NodeSelectorOpLte, "4").Obj())},
			pods:   onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
			onType: map[string]string{"p": "arm-medium"},
		},
		"Gt beyond every type": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeAffinityTerm(req(labelCPU, corev1.NodeSelectorOpGt, "64"))
			}),
			reasons: map[string]string{"p": "NodePool default: no instance type satisfies " + labelCPU + " Gte 65 [NoInstanceTypeOffered]"},
		},
		"a NodePool restricted to arm64": {
			pools:  []*NodePool{withTypes(test.MakeNodePool("default").Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64").Obj())},
			pods:   onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
			onType: map[string]string{"p": "arm-medium"},
		},
		"a pod asking amd64 from an arm64 NodePool": {
			pools: []*NodePool{withTypes(test.MakeNodePool("default").Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64").Obj())},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeSelector(map[string]string{corev1.LabelArchStable: "amd64"})
			}),
			reasons: map[string]string{"p": "NodePool default: incompatible requirements: requires kubernetes.io/arch In [amd64], NodePool allows kubernetes.io/arch In [arm64] [IncompatibleRequirements]"},
		},
		"an on-demand NodePool": {
			pools: []*NodePool{withTypes(test.MakeNodePool("default").Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).Obj())},
			pods:  onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
			check: func(t *testing.T, res *Result) {
				if ct := res.NodeClaims[0].Offering.CapacityType; ct != karpv1.CapacityTypeOnDemand {
					t.Fatalf("capacity type %s", ct)
				}
			},
		},
		"spot is chosen when allowed and cheaper": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
			check: func(t *testing.T, res *Result) {
				nc := res.NodeClaims[0]
				if nc.Offering.CapacityType != karpv1.CapacityTypeSpot || math.Abs(nc.Price-0.04) > 1e-9 {
					t.Fatalf("offering %+v price %v", nc.Offering, nc.Price)
				}
				if got := nc.Requirements.Get(karpv1.CapacityTypeLabelKey).String(); got != "karpenter.sh/capacity-type In [on-demand spot]" {
					t.Fatalf("capacity types %q", got)
				}
			},
		},
		"a zone no type offers": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeSelector(map[string]string{corev1.LabelTopologyZone: "zone-z"})
			}),
			reasons: map[string]string{"p": "NodePool default: no instance type satisfies topology.kubernetes.io/zone In [zone-z] [NoInstanceTypeOffered]"},
		},
		"the NodeClaim lists the fitting types cheapest first": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "3") }),
			check: func(t *testing.T, res *Result) {
				var got []string
				for _, it := range res.NodeClaims[0].InstanceTypes {
					got = append(got, it.Name)
				}
				want := "[arm-medium general-medium memory-large general-large gpu-large]"
				if s := "[" + join(got) + "]"; s != want {
					t.Fatalf("instance types %s, want %s", s, want)
				}
				if r := res.NodeClaims[0].Requirements.Get(corev1.LabelInstanceTypeStable).String(); r != "node.kubernetes.io/instance-type In [arm-medium general-large general-medium gpu-large memory-large]" {
					t.Fatalf("instance-type requirement %q", r)
				}
			},
		},
		"MaxInstanceTypes caps the list": {
			opts: Options{MaxInstanceTypes: 2},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
			check: func(t *testing.T, res *Result) {
				if got := len(res.NodeClaims[0].InstanceTypes); got != 2 {
					t.Fatalf("%d instance types, want 2", got)
				}
			},
		},
		"minValues kept by the types that fit": {
			pools: []*NodePool{withTypes(test.MakeNodePool("default").RequirementWithMinValues(labelFamily, corev1.NodeSelectorOpExists, 3).Obj())},
			pods:  onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
			check: func(t *testing.T, res *Result) {
				if res.NodeClaims[0].MinValuesRelaxed {
					t.Fatal("minValues relaxed")
				}
			},
		},
		"minValues Strict refuses too few families": {
			pools:   []*NodePool{withTypes(test.MakeNodePool("default").RequirementWithMinValues(labelFamily, corev1.NodeSelectorOpExists, 3).Obj())},
			pods:    onePod(func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "5") }),
			reasons: map[string]string{"p": "NodePool default: minValues not satisfied by the instance types that fit [MinValues]"},
		},
		"minValues BestEffort launches and says so": {
			opts:  Options{MinValuesPolicy: MinValuesPolicyBestEffort},
			pools: []*NodePool{withTypes(test.MakeNodePool("default").RequirementWithMinValues(labelFamily, corev1.NodeSelectorOpExists, 3).Obj())},
			pods:  onePod(func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "5") }),
			check: func(t *testing.T, res *Result) {
				if !res.NodeClaims[0].MinValuesRelaxed {
					t.Fatal("MinValuesRelaxed not set")
				}
			},
		},
		"unavailable offerings are skipped": {
			pools:  []*NodePool{withTypes(test.MakeNodePool("default").Obj(), unavailable(testTypes(), "general-small")...)},
			pods:   onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
			onType: map[string]string{"p": "arm-medium"},
		},
		"a NodePool without instance types": {
			pools:   []*NodePool{{NodePool: test.MakeNodePool("empty").Obj()}},
			pods:    onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
			reasons: map[string]string{"p": "NodePool empty: no instance type with an available offering [NoInstanceTypeOffered]"},
		},
		"no NodePools": {
			pools:   []*NodePool{},
			pods:    onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
			reasons: map[string]string{"p": "no NodePool can launch nodes [NoNodePool]"},
		},
		"volume topology pins the zone": {
			pods:    onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
			volumes: map[types.UID][]scheduling.Requirements{"uid-p": {zoneReqs(zoneB)}},
			inZone:  zoneIs(zoneB),
		},
		"the second volume alternative is used when the first is impossible": {
			pods:    onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
			volumes: map[types.UID][]scheduling.Requirements{"uid-p": {zoneReqs("zone-z"), zoneReqs(zoneC)}},
			inZone:  zoneIs(zoneC),
		},
		"volume topology and nodeSelector disagree": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeSelector(map[string]string{corev1.LabelTopologyZone: zoneA})
			}),
			volumes: map[types.UID][]scheduling.Requirements{"uid-p": {zoneReqs(zoneB)}},
			reasons: map[string]string{"p": "NodePool default: no instance type satisfies topology.kubernetes.io/zone In [] [NoInstanceTypeOffered]"},
		},
	})
}

func deleting(np *karpv1.NodePool) *karpv1.NodePool {
	ts := metav1.NewTime(testNow)
	np.DeletionTimestamp = &ts
	return np
}

func TestSolveReservations(t *testing.T) {
	types := func() []*scheduling.InstanceType {
		out := testTypes()
		out[0].Offerings = append(out[0].Offerings, &scheduling.Offering{Zone: zoneA, CapacityType: karpv1.CapacityTypeReserved,
			Price: 0.01, Available: true, ReservationID: "r-1", ReservationCapacity: 1})
		out[0].RefreshOfferingRequirements()
		return out
	}
	runCases(t, map[string]solveCase{
		"a reservation is used once, then regular capacity": {
			pools: []*NodePool{withTypes(test.MakeNodePool("default").Obj(), types()...)},
			pods: pods("p", 2, func(w *test.PodWrapper) *test.PodWrapper {
				return w.Label("app", "x").Requests("cpu", "1").PodAntiAffinity(corev1.LabelHostname, map[string]string{"app": "x"})
			}),
			claims: n(2),
			check: func(t *testing.T, res *Result) {
				var reserved, other int
				for _, nc := range res.NodeClaims {
					if nc.Offering.CapacityType == karpv1.CapacityTypeReserved {
						reserved++
						if r := nc.Requirements.Get(scheduling.LabelReservationID); r == nil || !r.Has("r-1") || r.Len() != 1 {
							t.Errorf("reserved NodeClaim not pinned to r-1: %s", nc.Requirements)
						}
					} else {
						other++
					}
				}
				if reserved != 1 || other != 1 {
					t.Fatalf("%d reserved and %d other NodeClaims, want 1 and 1", reserved, other)
				}
			},
		},
		"an exhausted reservation is not offered": {
			pools: []*NodePool{withTypes(test.MakeNodePool("default").Obj(), exhausted(types())...)},
			pods:  onePod(func(w *test.PodWrapper) *test.PodWrapper { return w }),
			check: func(t *testing.T, res *Result) {
				if ct := res.NodeClaims[0].Offering.CapacityType; ct == karpv1.CapacityTypeReserved {
					t.Fatal("used a reservation with no capacity")
				}
			},
		},
	})
}

func exhausted(types []*scheduling.InstanceType) []*scheduling.InstanceType {
	for _, o := range types[0].Offerings {
		if o.ReservationID != "" {
			o.ReservationCapacity = 0
		}
	}
	types[0].RefreshOfferingRequirements()
	return types
}

func zoneReqs(zone string) scheduling.Requirements {
	return scheduling.NewRequirements(scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone))
}

func unavailable(types []*scheduling.InstanceType, name string) []*scheduling.InstanceType {
	catalog.MarkUnavailable(types, name, "", "")
	return types
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

func TestSolveNodePoolOrder(t *testing.T) {
	weighted := func(name string, w int32) *karpv1.NodePool { return test.MakeNodePool(name).Weight(w).Obj() }
	pod := onePod(func(w *test.PodWrapper) *test.PodWrapper { return w })
	runCases(t, map[string]solveCase{
		"a static NodePool takes no part": {
			pools: []*NodePool{withTypes(test.MakeNodePool("static").Weight(50).Replicas(3).Obj()), withTypes(weighted("dynamic", 1))},
			pods:  pod, inPool: map[string]string{"p": "dynamic"},
		},
		"a deleting NodePool takes no part": {
			pools: []*NodePool{withTypes(deleting(weighted("going", 50))), withTypes(weighted("staying", 1))},
			pods:  pod, inPool: map[string]string{"p": "staying"},
		},
		"the heavier NodePool wins": {
			pools: []*NodePool{withTypes(weighted("low", 1)), withTypes(weighted("high", 50))},
			pods:  pod, inPool: map[string]string{"p": "high"},
		},
		"equal weights: name descending": {
			pools: []*NodePool{withTypes(test.MakeNodePool("a").Obj()), withTypes(test.MakeNodePool("b").Obj())},
			pods:  pod, inPool: map[string]string{"p": "b"},
		},
		"an incompatible heavier NodePool is skipped": {
			pools: []*NodePool{withTypes(weighted("low", 1)),
				withTypes(test.MakeNodePool("high").Weight(50).Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64").Obj())},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeSelector(map[string]string{corev1.LabelArchStable: "amd64"})
			}),
			inPool: map[string]string{"p": "low"},
		},
		"a heavier NodePool wins even when pricier": {
			pools: []*NodePool{withTypes(weighted("cheap", 1)),
				withTypes(weighted("pricey", 50), makeType("general-xl", "amd64", 1.0, "cpu", "16", "memory", "64Gi", "pods", "100"))},
			pods: pod, inPool: map[string]string{"p": "pricey"}, onType: map[string]string{"p": "general-xl"},
		},
		"reasons list every NodePool in order": {
			pools:   []*NodePool{withTypes(weighted("a", 1)), withTypes(weighted("b", 2))},
			pods:    onePod(func(w *test.PodWrapper) *test.PodWrapper { return w.Requests("cpu", "64") }),
			reasons: map[string]string{"p": "NodePool b: no instance type has 64 cpu (the largest allocatable is 8) [InstanceTypesTooSmall]; NodePool a: no instance type has 64 cpu (the largest allocatable is 8) [InstanceTypesTooSmall]"},
		},
	})
}

func TestSolvePreferences(t *testing.T) {
	runCases(t, map[string]solveCase{
		"a preferred arch is honoured": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.PreferredNodeAffinity(10, req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"))
			}),
			onType: map[string]string{"p": "arm-medium"},
		},
		"preferences are ignored by policy": {
			opts: Options{PreferencePolicy: PreferencePolicyIgnore},
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.PreferredNodeAffinity(10, req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"))
			}),
			onType: map[string]string{"p": "general-small"},
		},
		"an impossible preference is relaxed": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.PreferredNodeAffinity(10, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-z"))
			}),
			onType: map[string]string{"p": "general-small"},
		},
		"the heaviest preference is tried first": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.PreferredNodeAffinity(10, req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")).
					PreferredNodeAffinity(50, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zoneB))
			}),
			onType: map[string]string{"p": "general-small"}, inZone: map[string]string{"p": zoneB},
		},
		"a lighter preference applies when the heaviest cannot": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.PreferredNodeAffinity(10, req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")).
					PreferredNodeAffinity(50, req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-z"))
			}),
			onType: map[string]string{"p": "arm-medium"},
		},
		"preferences never override requirements": {
			pods: onePod(func(w *test.PodWrapper) *test.PodWrapper {
				return w.NodeSelector(map[string]string{corev1.LabelArchStable: "amd64"}).
					PreferredNodeAffinity(10, req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"))
			}),
			onType: map[string]string{"p": "general-small"},
		},
	})
}
