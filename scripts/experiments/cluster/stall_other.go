//go:build !unix

package main

import "os"

// stopSignal and contSignal: no such signals here, so -stall-replica
// reports that it could not stop the replica.
var stopSignal, contSignal os.Signal = unsupported{}, unsupported{}

type unsupported struct{}

func (unsupported) String() string { return "SIGSTOP (not on this platform)" }
func (unsupported) Signal()        {}
