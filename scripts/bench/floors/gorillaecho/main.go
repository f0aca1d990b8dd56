// Command gorillaecho is the floor that echo-gorilla and broadcast-gorilla
// are measured against in make bench-conns and make bench-echo, and the
// gorilla/websocket row of the frameworks experiment: a minimal WebSocket
// echo server as gorilla/websocket's own echo example serves it, on
// net/http, upgrading at "/" and writing every message back as it came
// (text as text, binary as binary), with gorilla's defaults otherwise: no
// compression, no logging. It keeps no metrics, no timeouts, no
// connection cap and no registry: what a connection costs here is what
// net/http and gorilla cost, and whatever the targets spend beyond it is
// knowngood's own. Go's net sets TCP_NODELAY on every TCP connection by
// default, so the server does not.
//
//	go run ./scripts/bench/floors/gorillaecho [-addr 127.0.0.1:0]
//
// Once it accepts, it prints {"msg":"listening","addr":"HOST:PORT",
// "framework":"github.com/gorilla/websocket vX.Y.Z"} on stdout, the line
// the benchmarks read. It is a benchmark floor, not a server to expose: it
// accepts any Origin.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/gorilla/websocket"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "TCP `address` to listen on")
	maxMessage := flag.Int64("max-message", 1<<20, "largest message accepted, in bytes")
	flag.Parse()

	u := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c, err := u.Upgrade(w, r, nil)
		if err != nil {
			return // Upgrade has answered the client
		}
		defer c.Close()
		c.SetReadLimit(*maxMessage)
		for {
			op, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(op, msg); err != nil {
				return
			}
		}
	})

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gorillaecho:", err)
		os.Exit(1)
	}
	fmt.Printf("{\"msg\":\"listening\",\"addr\":%q,\"framework\":%q}\n", ln.Addr().String(), framework())
	go func() {
		err := http.Serve(ln, mux)
		fmt.Fprintln(os.Stderr, "gorillaecho:", err)
		os.Exit(1)
	}()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}

// framework is the library and the version this binary was built with.
func framework() string {
	const path = "github.com/gorilla/websocket"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == path {
				return path + " " + m.Version
			}
		}
	}
	return path
}
