package main

import (
	"fmt"
	"io"

	"github.com/knowngood/knowngood/shared/buildinfo"
)

// printVersion answers `loadgen -version` (or --version, or version): the
// module version, commit and Go version of this build, one line. It
// reports whether args asked for it.
func printVersion(args []string, w io.Writer) bool {
	if len(args) != 1 || (args[0] != "-version" && args[0] != "--version" && args[0] != "version") {
		return false
	}
	fmt.Fprintln(w, "loadgen", buildinfo.Read())
	return true
}
