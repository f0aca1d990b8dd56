//go:build unix

package main

import (
	"net"
	"strconv"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// listenAddr is the address the engine's listener is bound to: gnet does
// not say which port the kernel chose for :0, so ask the socket.
func listenAddr(eng gnet.Engine) (string, error) {
	fd, err := eng.Dup()
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return "", err
	}
	var host string
	var port int
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		host, port = net.IP(a.Addr[:]).String(), a.Port
	case *unix.SockaddrInet6:
		host, port = net.IP(a.Addr[:]).String(), a.Port
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}
