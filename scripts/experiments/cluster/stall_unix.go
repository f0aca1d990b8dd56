//go:build unix

package main

import (
	"os"
	"syscall"
)

// stopSignal stops a process and contSignal lets it go on.
var stopSignal, contSignal os.Signal = syscall.SIGSTOP, syscall.SIGCONT
