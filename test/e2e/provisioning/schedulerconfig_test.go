package provisioning_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestSchedulerConfigSpreadsOverZones: karp started with a
// --scheduler-config whose default constraint spreads every workload over
// zones (DoNotSchedule) launches one node per zone for a Deployment that
// declares no spread, whose three small pods would otherwise share a node.
func TestSchedulerConfigSpreadsOverZones(t *testing.T) {
	config := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(config, []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    pluginConfig:
      - name: PodTopologySpread
        args:
          defaultingType: List
          defaultConstraints:
            - maxSkew: 1
              topologyKey: topology.kubernetes.io/zone
              whenUnsatisfiable: DoNotSchedule
`), 0o600); err != nil {
		t.Fatal(err)
	}
	restartControllerWith(t, "--scheduler-config="+config)
	// Registered first, so it runs last: the next test gets the suite's
	// controller back after this test's nodes are gone.
	t.Cleanup(stopController)
	ensureNodeClass(t)
	create(t, pool("e2e-spread").Obj(), deployment("e2e-spread", 3, "500m", "512Mi", onPool("e2e-spread")))

	waitRunning(t, "default", "e2e-spread", 3)
	framework.Eventually(t, scaleTimeout, func(context.Context) (bool, string) {
		zones := map[string]int{}
		for _, node := range nodesOf(t, "e2e-spread") {
			zones[node.Labels[corev1.LabelTopologyZone]]++
		}
		claims := len(nodeClaimsOf(t, "e2e-spread"))
		return len(zones) == 3 && claims == 3, fmt.Sprintf("%d NodeClaims, nodes by zone %v; want one node in each of three zones", claims, zones)
	})
}
