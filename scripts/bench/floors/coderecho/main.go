// Command coderecho is the floor that echo-coder and broadcast-coder are
// measured against in make bench-conns and make bench-echo, and the
// nhooyr.io (coder) row of the frameworks experiment: a minimal WebSocket
// echo server on github.com/coder/websocket (nhooyr.io/websocket as it is
// maintained now) on net/http, accepting at "/" and writing every message
// back as it came (text as text, binary as binary), with the library's
// defaults otherwise: compression disabled, no logging. It keeps no
// metrics, no timeouts, no connection cap and no registry: what a
// connection costs here is what net/http and the library cost, and
// whatever the targets spend beyond it is knowngood's own. Go's net sets
// TCP_NODELAY on every TCP connection by default, so the server does not.
//
//	go run ./scripts/bench/floors/coderecho [-addr 127.0.0.1:0]
//
// Once it accepts, it prints {"msg":"listening","addr":"HOST:PORT",
// "framework":"github.com/coder/websocket vX.Y.Z"} on stdout, the line
// the benchmarks read. It is a benchmark floor, not a server to expose: it
// accepts any Origin.
package main

import (
	"context"
	"flag"
	"net/http"

	"github.com/coder/websocket"

	"github.com/knowngood/knowngood/scripts/bench/floors/internal/floorhttp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "TCP `address` to listen on")
	maxMessage := flag.Int64("max-message", 1<<20, "largest message accepted, in bytes")
	flag.Parse()

	opts := &websocket.AcceptOptions{InsecureSkipVerify: true, CompressionMode: websocket.CompressionDisabled}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, opts)
		if err != nil {
			return // Accept has answered the client
		}
		defer c.CloseNow()
		c.SetReadLimit(*maxMessage)
		ctx := context.Background()
		for {
			op, msg, err := c.Read(ctx)
			if err != nil {
				return
			}
			if err := c.Write(ctx, op, msg); err != nil {
				return
			}
		}
	})
	floorhttp.Serve("coderecho", *addr, "github.com/coder/websocket", mux)
}
