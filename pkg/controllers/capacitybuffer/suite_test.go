package capacitybuffer_test

import (
	"testing"

	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// env is the real kube-apiserver the package's tests share.
var env *environment.Environment

func TestMain(m *testing.M) { environment.Main(m, &env) }
