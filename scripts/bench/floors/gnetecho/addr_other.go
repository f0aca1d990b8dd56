//go:build !unix

package main

import (
	"errors"

	"github.com/panjf2000/gnet/v2"
)

// listenAddr needs getsockname on the engine's descriptor, which gnet
// exposes only on unix; the floor is a Linux benchmark.
func listenAddr(gnet.Engine) (string, error) {
	return "", errors.New("the gnet floor reads its listening port from the socket, which it can do on unix only")
}
