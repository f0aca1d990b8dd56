package wsserver

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// gnet's package-level worker pool (Engine.Register runs on it)
		// keeps idle workers for 10 s and its janitors for good.
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*goWorker).run.func1"),
		goleak.IgnoreCurrent(),
	)
}
