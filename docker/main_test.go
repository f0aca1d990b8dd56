package docker

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"knowngood/scripts/testtarget"
)

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// knowngood builds the static binary once for the package's tests.
func knowngood(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() { binPath, buildErr = testtarget.Build("..", binDir) })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "knowngood-docker-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
