package wsserver

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// gnet's package-level worker pool starts its janitors at init.
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
