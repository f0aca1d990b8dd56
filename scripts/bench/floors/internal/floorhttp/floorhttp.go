// Package floorhttp is what the floors on net/http share: listen, say so
// in the line the benchmarks read (with the library's version, which the
// frameworks experiment prints beside its row), and serve until SIGINT or
// SIGTERM. The echo itself stays in each floor's main, as small as the
// library's own example.
package floorhttp

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// Serve listens on addr, prints {"msg":"listening","addr":...,
// "framework":"MODULE VERSION"} on stdout and serves h until the process
// is told to stop. name prefixes its errors, which end the process.
func Serve(name, addr, module string, h http.Handler) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	fmt.Printf("{\"msg\":\"listening\",\"addr\":%q,\"framework\":%q}\n", ln.Addr().String(), version(module))
	go func() {
		err := http.Serve(ln, h)
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}

// version is module with the version this binary was built with.
func version(module string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == module {
				return module + " " + m.Version
			}
		}
	}
	return module
}
