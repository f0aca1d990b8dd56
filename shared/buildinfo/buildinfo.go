// Package buildinfo describes the running binary as -version prints it:
// the module version (a tag when installed with go install MODULE@version,
// "(devel)" for a build from a checkout), the commit and its time when the
// binary was built from a VCS checkout with -buildvcs, whether the tree had
// changes, and the Go version and platform it was built with. Everything
// comes from runtime/debug.ReadBuildInfo, so a release binary and `go
// version -m` agree.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Info is what -version prints.
type Info struct {
	Module   string // module path
	Version  string // module version: v1.2.3, a pseudo-version, or (devel)
	Commit   string // vcs.revision; empty when built without VCS information
	Time     string // vcs.time, RFC 3339
	Modified bool   // vcs.modified: the tree had uncommitted changes
	Go       string // the Go version it was built with
	Platform string // GOOS/GOARCH
}

// Read returns this binary's Info.
func Read() Info {
	info := Info{Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Version: "(unknown)"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.Module, info.Version, info.Go = bi.Main.Path, bi.Main.Version, bi.GoVersion
	if info.Version == "" {
		info.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the one line -version prints, after the command's name:
//
//	knowngood v1.2.0 commit 0123456789ab (2026-12-01T10:00:00Z) go1.26.0 linux/amd64
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	if i.Commit != "" {
		fmt.Fprintf(&b, " commit %s", short(i.Commit))
		if i.Modified {
			b.WriteString("+modified")
		}
		if i.Time != "" {
			fmt.Fprintf(&b, " (%s)", i.Time)
		}
	}
	fmt.Fprintf(&b, " %s %s", i.Go, i.Platform)
	return b.String()
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
