// Command nbioecho is the floor that echo-nbio and broadcast-nbio are
// measured against in make bench-conns and make bench-echo: a minimal
// WebSocket echo server on nbio as nbio's own examples serve it, its
// nbhttp engine accepting and reading on its poller (IOModNonBlocking, no
// goroutine per connection), upgrading with nbhttp/websocket and echoing
// every message as it came. It keeps no metrics, no timeouts, no
// connection cap and no registry: what an idle connection costs here is
// what nbio costs on its own poller; the targets serve nbio's framing on
// net/http instead (servers/internal/wsserver/nbio.go says why), and the
// difference is theirs.
//
//	go run ./scripts/bench/floors/nbioecho [-addr 127.0.0.1:0]
//
// Once it accepts, it prints {"msg":"listening","addr":"HOST:PORT"} on
// stdout, the line the benchmarks read. It is a benchmark floor, not a
// server to expose.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/lesismal/nbio/logging"
	"github.com/lesismal/nbio/nbhttp"
	"github.com/lesismal/nbio/nbhttp/websocket"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "TCP `address` to listen on")
	maxMessage := flag.Int("max-message", 1<<20, "largest message accepted, in bytes")
	flag.Parse()

	logging.SetLevel(logging.LevelNone) // stdout carries the listening line
	u := websocket.NewUpgrader()
	u.CheckOrigin = func(*http.Request) bool { return true }
	u.KeepaliveTime = 0 // idle connections stay: the benchmark holds them
	u.MessageLengthLimit = *maxMessage
	u.OnMessage(func(c *websocket.Conn, op websocket.MessageType, data []byte) {
		_ = c.WriteMessage(op, data)
	})
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		_, _ = u.Upgrade(w, r, nil)
	})

	// The engine listens itself; Listen tells this program the port.
	bound := make(chan net.Addr, 1)
	engine := nbhttp.NewEngine(nbhttp.Config{
		Network: "tcp",
		Addrs:   []string{*addr},
		Handler: mux,
		IOMod:   nbhttp.IOModNonBlocking,
		NPoller: runtime.NumCPU(), // as many loops as gnetecho runs
		Listen: func(network, address string) (net.Listener, error) {
			ln, err := net.Listen(network, address)
			if err == nil {
				bound <- ln.Addr()
			}
			return ln, err
		},
	})
	if err := engine.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "nbioecho:", err)
		os.Exit(1)
	}
	fmt.Printf("{\"msg\":\"listening\",\"addr\":%q}\n", (<-bound).String())

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
	engine.Stop()
}
