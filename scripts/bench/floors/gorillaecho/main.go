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
	"net/http"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/scripts/bench/floors/internal/floorhttp"
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
	floorhttp.Serve("gorillaecho", *addr, "github.com/gorilla/websocket", mux)
}
