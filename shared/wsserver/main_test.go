package wsserver

import (
	"testing"

	"github.com/knowngood/knowngood/shared/lifecycle/leaktest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}
