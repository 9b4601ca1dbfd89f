package instancetype

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/karp-autoscaler/karp/pkg/catalog"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
)

// staticTables are the per-type figures DescribeInstanceTypes does not
// give: network bandwidth in megabits and the branch network interfaces
// available to pods with security groups (vpc.amazonaws.com/pod-eni, 0 when
// the type cannot trunk). Upstream compiles them in from generated tables;
// karp reads them from its embedded EC2 catalog, whose labels and
// allocatable are upstream's published values.
type staticTables struct {
	networkBandwidthMbps map[string]string
	podENIs              map[string]int64
}

var loadStaticTables = sync.OnceValues(func() (*staticTables, error) {
	var f catalog.File
	if err := json.Unmarshal(instancetypes.EC2, &f); err != nil {
		return nil, fmt.Errorf("decoding the embedded catalog: %w", err)
	}
	t := &staticTables{networkBandwidthMbps: map[string]string{}, podENIs: map[string]int64{}}
	for _, it := range f.InstanceTypes {
		if bw, ok := it.Labels[labelNetworkBandwidth]; ok {
			if _, err := strconv.ParseInt(bw, 10, 64); err == nil {
				t.networkBandwidthMbps[it.Name] = bw
			}
		}
		if q, ok := it.Allocatable[resourcePodENI]; ok {
			t.podENIs[it.Name] = q.Value()
		}
	}
	return t, nil
})
