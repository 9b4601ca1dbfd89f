package provisioningrequest_test

import (
	"testing"

	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

var env *environment.Environment

func TestMain(m *testing.M) { environment.Main(m, &env) }
