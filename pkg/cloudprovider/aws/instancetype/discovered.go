package instancetype

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// DiscoveredCapacityTTL is how long a memory capacity learnt from a
// registered Node is used (upstream's DiscoveredCapacityCacheTTL). Each
// Node that confirms the value restarts it.
const DiscoveredCapacityTTL = 60 * 24 * time.Hour

// discoveredKey is what a learnt memory capacity holds for: an instance
// type booted from one set of AMIs (upstream's key: the type and a hash of
// the class's resolved AMIs). A class whose AMIs change has a new hash, so
// what was learnt under the old AMIs no longer applies to it, and two
// classes with the same AMIs share what either's Nodes teach.
type discoveredKey struct {
	instanceType string
	amis         uint64
}

// discoveredMemory is the smallest memory capacity Nodes reported.
type discoveredMemory struct {
	memory  resource.Quantity
	expires time.Time
}

// RecordMemoryCapacity learns the memory capacity a registered Node of
// instanceType reports, when nodeClass's resolved AMIs (status.amis) are
// those the Node booted from (the caller checks that its image is the AMI
// a launch would pick now). With nothing learnt, the report is taken,
// even above the estimate (it is what the kubelet saw). After that the
// smallest capacity seen wins: a lower one replaces what was learnt, an
// equal one restarts its TTL, a higher one is ignored (upstream keeps the
// minimum, so one odd Node cannot make later launches promise memory the
// others lack). Until the TTL passes, List
// gives the type this memory capacity instead of the VM-memory-overhead
// estimate for every class with the same AMIs. It reports whether the
// type's memory changed.
func (p *Provider) RecordMemoryCapacity(ctx context.Context, nodeClass *awsv1.EC2NodeClass, instanceType string, memory resource.Quantity) bool {
	if instanceType == "" || memory.Sign() <= 0 {
		return false
	}
	key := discoveredKey{instanceType: instanceType, amis: amisHash(nodeClass.Status.AMIs)}
	now := p.clock.Now()

	p.discoveredMu.Lock()
	defer p.discoveredMu.Unlock()
	have, ok := p.discovered[key]
	if ok && !now.Before(have.expires) {
		ok = false
	}
	if ok && memory.Cmp(have.memory) > 0 {
		return false
	}
	p.discovered[key] = discoveredMemory{memory: memory.DeepCopy(), expires: now.Add(DiscoveredCapacityTTL)}
	if ok && memory.Cmp(have.memory) == 0 {
		return false
	}
	for k, e := range p.discovered {
		if !now.Before(e.expires) {
			delete(p.discovered, k)
		}
	}
	p.discoveredVersion++
	log.FromContext(ctx).V(1).Info("discovered the memory capacity of an instance type", "instanceType", instanceType, "memoryCapacity", memory.String())
	return true
}

// discoveredFor returns the memory capacities learnt for the AMIs, by
// instance type, and the version of what was learnt they were read at.
func (p *Provider) discoveredFor(amis []awsv1.AMI) (map[string]resource.Quantity, uint64) {
	hash := amisHash(amis)
	now := p.clock.Now()
	p.discoveredMu.Lock()
	defer p.discoveredMu.Unlock()
	out := map[string]resource.Quantity{}
	for k, e := range p.discovered {
		if k.amis == hash && now.Before(e.expires) {
			out[k.instanceType] = e.memory
		}
	}
	return out, p.discoveredVersion
}

// currentDiscoveredVersion moves whenever a learnt memory capacity changes.
func (p *Provider) currentDiscoveredVersion() uint64 {
	p.discoveredMu.Lock()
	defer p.discoveredMu.Unlock()
	return p.discoveredVersion
}

// amisHash hashes the AMIs as a set: the same AMIs in another order hash
// the same, as upstream's SlicesAsSets hash.
func amisHash(amis []awsv1.AMI) uint64 {
	encoded := make([]string, 0, len(amis))
	for _, ami := range amis {
		ami.Requirements = slices.Clone(ami.Requirements)
		for i := range ami.Requirements {
			ami.Requirements[i].Values = slices.Sorted(slices.Values(ami.Requirements[i].Values))
		}
		slices.SortFunc(ami.Requirements, func(a, b corev1.NodeSelectorRequirement) int {
			return strings.Compare(a.Key+"\x00"+string(a.Operator), b.Key+"\x00"+string(b.Operator))
		})
		b, err := json.Marshal(ami)
		if err != nil {
			// Plain strings only; Marshal cannot fail on them.
			panic("encoding an AMI: " + err.Error())
		}
		encoded = append(encoded, string(b))
	}
	slices.Sort(encoded)
	h := fnv.New64a()
	for _, e := range encoded {
		_, _ = h.Write([]byte(e))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}
