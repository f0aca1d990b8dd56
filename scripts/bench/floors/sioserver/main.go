// Command bare is the floor of the handshake and Socket.IO room broadcast
// benchmarks: a Socket.IO server on github.com/zishang520/socket.io v3 with
// nothing of knowngood in it. It has the engine options that `knowngood
// -variant empty` runs with by default (both transports, ping 25 s / 20 s,
// 1 MB payloads, a 45 s connect timeout, CORS for any origin) and answers
// the events those benchmarks' clients send, on "/", as `empty` and
// scripts/node/sio-server.mjs do: echo (the arguments back in the ack),
// join (the socket joins the room named by the first argument; the ack
// carries the name) and broadcast-room (the arguments after the first go
// as a "broadcast" event to the room named by the first; the ack carries
// the room's count). No middleware, no metrics, no corrections of the
// library: what `empty` costs beyond it is knowngood's own.
//
//	bare [port=0] [host=127.0.0.1] [pprof]
//
// With "pprof", /debug/pprof/ is served on the same port, for the
// benchmark's profiles.
//
// It prints one JSON line {"msg":"listening","addr":"HOST:PORT"} when ready
// and stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/zishang520/socket.io/servers/engine/v3"
	"github.com/zishang520/socket.io/servers/engine/v3/transports"
	"github.com/zishang520/socket.io/servers/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"
)

func main() {
	port, host := "0", "127.0.0.1"
	if len(os.Args) > 1 {
		port = os.Args[1]
	}
	if len(os.Args) > 2 {
		host = os.Args[2]
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		fmt.Fprintf(os.Stderr, "bare: %v\n", err)
		os.Exit(1)
	}

	io := newServer()
	handler := io.ServeHandler(nil)

	mux := http.NewServeMux()
	mux.Handle("/socket.io/", handler)
	if len(os.Args) > 3 && os.Args[3] == "pprof" {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	line, _ := json.Marshal(map[string]string{"msg": "listening", "addr": ln.Addr().String()})
	fmt.Println(string(line))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-sig:
	case err := <-done:
		fmt.Fprintf(os.Stderr, "bare: %v\n", err)
		os.Exit(1)
	}
	io.Close(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
}

// newServer is the library's server with empty's default engine options,
// answering the benchmarks' events.
func newServer() *socket.Server {
	opts := socket.DefaultServerOptions()
	opts.SetPingInterval(25 * time.Second)
	opts.SetPingTimeout(20 * time.Second)
	opts.SetMaxHttpBufferSize(1_000_000)
	opts.SetConnectTimeout(45 * time.Second)
	opts.SetServeClient(false)
	opts.SetTransports(types.NewSet[transports.TransportCtor](engine.Polling, engine.WebSocket))
	opts.SetCors(&types.Cors{Origin: "*", Credentials: true})
	io := socket.NewServer(nil, opts)
	_ = io.On("connection", func(args ...any) { serve(args[0].(*socket.Socket)) })
	return io
}

// serve answers echo, join and broadcast-room on sock.
func serve(sock *socket.Socket) {
	_ = sock.On("echo", func(args ...any) {
		if args, ack := splitAck(args); ack != nil {
			ack(args, nil)
		}
	})
	_ = sock.On("join", func(args ...any) {
		args, ack := splitAck(args)
		room := ""
		if len(args) > 0 {
			room = fmt.Sprint(args[0])
		}
		if room != "" {
			sock.Join(socket.Room(room))
		}
		if ack != nil {
			ack([]any{room}, nil)
		}
	})
	_ = sock.On("broadcast-room", func(args ...any) {
		args, ack := splitAck(args)
		room, members := "", 0
		if len(args) > 0 {
			room, args = fmt.Sprint(args[0]), args[1:]
		}
		if room != "" {
			if ids, ok := sock.Nsp().Adapter().Rooms().Load(socket.Room(room)); ok {
				members = ids.Len()
			}
			_ = sock.Nsp().To(socket.Room(room)).Emit("broadcast", args...)
		}
		if ack != nil {
			ack([]any{members}, nil)
		}
	})
}

// splitAck separates the acknowledgement callback, which the library
// appends as the last argument when the client asked for one.
func splitAck(args []any) ([]any, socket.Ack) {
	if n := len(args); n > 0 {
		if ack, ok := args[n-1].(socket.Ack); ok {
			return args[:n-1], ack
		}
	}
	return args, nil
}
