package lifecycle

import "syscall"

// signalName: Windows has no table of signal names; SignalName falls back
// on the signal's String.
func signalName(syscall.Signal) string { return "" }

// relisten calls listen again on a listening socket. Windows keeps the
// first backlog (Go's, SOMAXCONN) and says nothing.
func relisten(fd uintptr, backlog int) error { return syscall.Listen(syscall.Handle(fd), backlog) }
