//go:build !unix

package main

import (
	"io"
	"net"
)

// holdPort is a free TCP port on 127.0.0.1. Without SO_REUSEPORT the port
// cannot be held while nginx binds it: it is freed at once, as a probe for
// a free port is elsewhere.
func holdPort() (int, io.Closer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	return port, noHold{}, ln.Close()
}

// noHold is the Closer of a port that is not held.
type noHold struct{}

func (noHold) Close() error { return nil }
