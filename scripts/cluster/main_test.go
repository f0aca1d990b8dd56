package cluster

import (
	"testing"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/shared/leaktest"
)

func TestMain(m *testing.M) { leaktest.Main(m, harness.RemoveBuilds) }
