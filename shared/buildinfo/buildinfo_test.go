package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	i := Info{Version: "v1.2.0", Commit: "0123456789abcdef", Time: "2026-12-01T10:00:00Z", Go: "go1.26.0", Platform: "linux/amd64"}
	if got, want := i.String(), "v1.2.0 commit 0123456789ab (2026-12-01T10:00:00Z) go1.26.0 linux/amd64"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	i.Modified = true
	if got := i.String(); !strings.Contains(got, "0123456789ab+modified") {
		t.Errorf("modified: %q", got)
	}
	if got, want := (Info{Version: "(devel)", Go: "go1.26.0", Platform: "darwin/arm64"}).String(), "(devel) go1.26.0 darwin/arm64"; got != want {
		t.Errorf("no VCS: %q, want %q", got, want)
	}
}

// TestRead: a test binary has build info; its Go version is this one's.
func TestRead(t *testing.T) {
	i := Read()
	if i.Go != runtime.Version() || i.Platform != runtime.GOOS+"/"+runtime.GOARCH || i.Version == "" {
		t.Errorf("Read() = %+v", i)
	}
}
