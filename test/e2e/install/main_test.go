package install

import (
	"os"
	"testing"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

func TestMain(m *testing.M) {
	code := framework.Run(m)
	stopController()
	cleanUp(code != 0)
	os.Exit(code)
}
