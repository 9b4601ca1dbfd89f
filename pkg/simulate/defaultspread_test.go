package simulate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

const smallDeployment = `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: app, resources: {requests: {cpu: 100m}}}]
`

const smallStatefulSet = `---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default}
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: app, image: app, resources: {requests: {cpu: 100m}}}]
`

// TestSimulateAppliesDefaultSpread: with a DoNotSchedule zone default,
// `karp simulate` spreads a Deployment and a StatefulSet that declare no
// spread over three zones (each workload one pod per zone, by its own
// selector); without it the six small pods share a node.
func TestSimulateAppliesDefaultSpread(t *testing.T) {
	path := writeManifest(t, defaultPool+smallDeployment+smallStatefulSet)
	zoneDefault := scheduling.SpreadDefaults{scheduling.AnyScheduler: {{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule}}}

	rep, err := Run(t.Context(), Options{Paths: []string{path}, InstanceTypes: ec2Catalog(t), DefaultSpread: zoneDefault})
	if err != nil {
		t.Fatal(err)
	}
	perZone := map[string]map[string]int{} // workload -> zone -> pods
	for _, nc := range rep.NodeClaims {
		for _, pod := range nc.Pods {
			workload := strings.SplitN(strings.TrimPrefix(pod, "default/"), "-", 2)[0]
			if perZone[workload] == nil {
				perZone[workload] = map[string]int{}
			}
			perZone[workload][nc.Zone]++
		}
	}
	if len(rep.Unschedulable) != 0 {
		t.Errorf("%d pods unschedulable", len(rep.Unschedulable))
	}
	for _, workload := range []string{"web", "db"} {
		if zones := perZone[workload]; len(zones) != 3 {
			t.Errorf("%s pods by zone %v, want one in each of three zones", workload, zones)
		}
	}

	if rep := simulateFiles(t, path); len(rep.NodeClaims) != 1 {
		t.Errorf("without defaults: %d NodeClaims, want 1", len(rep.NodeClaims))
	}
}

// TestSimulateDefaultSpreadSelectsByService: bare pods have no owner, so
// only the Service selecting them gives the default spread a selector, as
// kube-scheduler deduces it. With the Service among the manifests the
// three pods spread over three zones; without it nothing selects them
// and they share a node.
func TestSimulateDefaultSpreadSelectsByService(t *testing.T) {
	var pods strings.Builder
	for _, name := range []string{"cache-0", "cache-1", "cache-2"} {
		pods.WriteString(`---
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, namespace: default, labels: {app: cache}}
spec:
  containers: [{name: app, image: app, resources: {requests: {cpu: 100m}}}]
`)
	}
	const service = `---
apiVersion: v1
kind: Service
metadata: {name: cache, namespace: default}
spec:
  selector: {app: cache}
  ports: [{port: 6379}]
`
	zoneDefault := scheduling.SpreadDefaults{scheduling.AnyScheduler: {{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule}}}
	zones := func(manifests string) map[string]int {
		t.Helper()
		rep, err := Run(t.Context(), Options{Paths: []string{writeManifest(t, manifests)}, InstanceTypes: ec2Catalog(t), DefaultSpread: zoneDefault})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Unschedulable) != 0 {
			t.Fatalf("%d pods unschedulable", len(rep.Unschedulable))
		}
		out := map[string]int{}
		for _, nc := range rep.NodeClaims {
			out[nc.Zone] += len(nc.Pods)
		}
		return out
	}
	if got := zones(defaultPool + pods.String() + service); len(got) != 3 {
		t.Errorf("with the Service: pods by zone %v, want one in each of three zones", got)
	}
	if got := zones(defaultPool + pods.String()); len(got) != 1 {
		t.Errorf("without the Service: pods by zone %v, want all on one node", got)
	}
}
