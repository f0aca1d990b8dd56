package wsserver

import (
	"testing"

	"github.com/knowngood/knowngood/shared/leaktest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}
