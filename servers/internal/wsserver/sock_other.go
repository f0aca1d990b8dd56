//go:build !linux && !darwin

package wsserver

import (
	"errors"
	"fmt"
	"net"
	"runtime"
)

// rawSockets is off: connections take the portable paths (no look at the
// receive queue; a write without waiting is a write with a short deadline),
// and the gnet variants do not start here (variants.Variant.Unavailable).
const rawSockets = false

func inputBytes(uintptr) int  { return 0 }
func writeFD(uintptr, []byte) {}
func shutdownWrite(int)       {}

func socketpair() (inner, outer *net.UnixConn, err error) {
	return nil, nil, fmt.Errorf("socketpair on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
