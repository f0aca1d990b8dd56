package docker

import (
	"testing"

	"github.com/knowngood/knowngood/scripts/harness"
)

func TestMain(m *testing.M) { harness.Main(m, harness.RemoveBuilds) }
