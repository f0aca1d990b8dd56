package variants

import "runtime"

// Unavailable is why v cannot run on this operating system, or "" when it
// can. gnet serves from epoll (Linux) or kqueue (macOS, the BSDs); on
// Windows its fallback is a goroutine per connection, which is not what
// the gnet variants are there to measure, and its sockets have no
// descriptor to shut down or probe, so they are not offered there.
func (v Variant) Unavailable() string { return unavailableOn(runtime.GOOS, v) }

// unavailableOn is Unavailable for the operating system goos.
func unavailableOn(goos string, v Variant) string {
	if goos == "windows" && v.Library == Gnet {
		return "gnet needs epoll/kqueue"
	}
	return ""
}

// Available selects the variants that run on this operating system.
func Available(v Variant) bool { return v.Unavailable() == "" }

// Platforms is the operating systems the release builds are made for, in
// the order the support table lists them.
var Platforms = []string{"linux", "darwin", "windows"}

// RunsOn reports whether v runs on goos (one of Platforms).
func RunsOn(v Variant, goos string) bool { return unavailableOn(goos, v) == "" }

// URL is the address a client of v pastes to reach it at hostport:
// ws://HOST:PORT/ for the WebSocket variants, http://HOST:PORT/socket.io/
// for Socket.IO, tcp://HOST:PORT for echo-tcp; wss, https and tls with
// TLS.
func (v Variant) URL(hostport string, tls bool) string {
	scheme, path := "tcp", ""
	switch v.Protocol {
	case WebSocket:
		scheme, path = "ws", "/"
	case SocketIOProtocol:
		scheme, path = "http", "/socket.io/"
	}
	if tls {
		scheme = map[string]string{"ws": "wss", "http": "https", "tcp": "tls"}[scheme]
	}
	return scheme + "://" + hostport + path
}
