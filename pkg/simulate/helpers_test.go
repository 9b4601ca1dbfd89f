package simulate

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
)

var (
	ec2Once  sync.Once
	ec2Types []*scheduling.InstanceType
	ec2Err   error
)

// ec2Catalog is the 1,364-type EC2 catalog the kwok provider embeds, as
// the provider offers it (the default of karp simulate).
func ec2Catalog(t testing.TB) []*scheduling.InstanceType {
	t.Helper()
	ec2Once.Do(func() {
		ec2Types, ec2Err = kwok.LoadInstanceTypes("", nil)
	})
	if ec2Err != nil {
		t.Fatal(ec2Err)
	}
	return ec2Types
}

func seed(t testing.TB, name string) string {
	return fixtures.Example(t, name)
}

func testdata(name string) string { return filepath.Join("testdata", name) }

// simulateFiles runs the dry-run on files against the EC2 catalog.
func simulateFiles(t testing.TB, files ...string) *Report {
	t.Helper()
	rep, err := Run(t.Context(), Options{Paths: files, InstanceTypes: ec2Catalog(t)})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// instanceType finds a catalog type by name.
func instanceType(t testing.TB, name string) *scheduling.InstanceType {
	t.Helper()
	for _, it := range ec2Catalog(t) {
		if it.Name == name {
			return it
		}
	}
	t.Fatalf("instance type %s not in the catalog", name)
	return nil
}
