// Package settings maps the flags (shared/config) onto the options of
// each layer under servers/: the one place where a flag meets the code
// that obeys it. The layers take their own options, as coder/websocket's
// AcceptOptions and gnet's options are taken, so that each can be read,
// tested and reused without the whole flag set.
package settings

import (
	"net"
	"slices"

	"github.com/knowngood/knowngood/servers/broadcast"
	"github.com/knowngood/knowngood/servers/echo"
	"github.com/knowngood/knowngood/servers/internal/admin"
	"github.com/knowngood/knowngood/servers/internal/adminui"
	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/servers/internal/wsserver"
	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/protocol"
)

// HTTP is what bounds a client on an HTTP listener, the target's or the
// admin's.
func HTTP(c config.Config) lifecycle.HTTPLimits {
	return lifecycle.HTTPLimits{Header: c.HandshakeTimeout, HeaderBytes: c.MaxHeaderBytes, Idle: c.IdleTimeout, Body: c.BodyTimeout}
}

// Run is what lifecycle.Run serves target with: a Socket.IO target
// started with -admin-ui and the admin listener learn where the other
// listens (adminui.Link).
func Run(c config.Config, target any) lifecycle.Options {
	o := lifecycle.Options{
		Name: c.Variant, Addr: c.Addr, AdminAddr: c.AdminAddr, Backlog: c.Backlog,
		TLSCert: c.TLS.Cert, TLSKey: c.TLS.Key, TLSClientCA: c.TLS.ClientCA, ShutdownTimeout: c.ShutdownTimeout,
		Limits: HTTP(c),
	}
	if link := adminUI(target); link != nil {
		o.Listening = link.Listening
	}
	return o
}

// Admin is what the admin listener shows and takes orders for; about is
// the catalog's entry for the variant, target what the orders go to.
func Admin(c config.Config, about protocol.About, target any) admin.Options {
	return admin.Options{
		Variant: c.Variant, About: about, Config: c.Effective(), Replicas: c.Dashboard.Replicas, Pprof: c.Pprof,
		Control: admin.Control{Target: target, Token: c.AdminToken, Loopback: loopback(c.AdminAddr)},
		AdminUI: adminUI(target),
	}
}

// adminUI is the Link of a Socket.IO target started with -admin-ui; nil
// for any other.
func adminUI(target any) *adminui.Link {
	if t, ok := target.(interface{ AdminUI() *adminui.Link }); ok {
		return t.AdminUI()
	}
	return nil
}

// adminUILink is the Link a Socket.IO target started with -admin-ui
// shares with the admin listener; nil without -admin-ui.
func adminUILink(c config.Config) *adminui.Link {
	s := c.SocketIO
	if !s.AdminUI {
		return nil
	}
	wsOnly := s.Engine == config.EngineNativeGnet || !slices.Contains(s.Transports, "polling")
	return adminui.NewLink(s.MountPath(), wsOnly, c.TLS.Cert != "")
}

// loopback reports whether a listen address binds a loopback address
// only: 127.0.0.1:9100, [::1]:9100, localhost:9100; not :9100, which
// binds every address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// TCP is what echo-tcp obeys.
func TCP(c config.Config) echo.TCPOptions {
	return echo.TCPOptions{Name: c.Variant, MaxConns: c.MaxConns, Idle: c.PingInterval + c.PingTimeout, Faults: c.Faults}
}

// Broadcast is what the broadcast targets obey.
func Broadcast(c config.Config) broadcast.Options {
	return broadcast.Options{
		WebSocket: WebSocket(c), Slow: c.Broadcast.Slow, SendQueue: c.Broadcast.SendQueue,
		PushInterval: c.Broadcast.PushInterval, PushSize: c.Broadcast.PushSize, Redis: c.Cluster.Redis,
	}
}

// SocketIO is what the Socket.IO targets obey.
func SocketIO(c config.Config) socketio.Options {
	s := c.SocketIO
	return socketio.Options{
		Name: c.Variant, Engine: s.Engine,
		Delay: s.Delay, BlockingModel: s.BlockingModel,
		Transports: s.Transports, MaxPayload: s.MaxPayload, ConnectTimeout: s.ConnectTimeout,
		EmitAuth: s.EmitAuth, AckDelay: s.AckDelay, AllowEIO3: s.AllowEIO3, Recovery: s.Recovery,
		Path: s.MountPath(), Namespaces: s.Namespaces,
		PushInterval: c.Broadcast.PushInterval, PushSize: c.Broadcast.PushSize, PushEvent: s.PushEvent, PushRooms: s.PushRooms,
		Origins: c.Origins, MaxConns: c.MaxConns, Compression: c.Compression,
		PingInterval: c.PingInterval, PingTimeout: c.PingTimeout, Loops: c.Gnet.Loops,
		Redis: c.Cluster.Redis, Faults: c.Faults, HTTP: HTTP(c),
		AdminUI: adminUILink(c),
	}
}

// WebSocket is what the WebSocket layer obeys.
func WebSocket(c config.Config) wsserver.Settings {
	return wsserver.Settings{
		Name: c.Variant, MaxMessage: c.MaxMessage, Compression: c.Compression, Origins: c.Origins,
		Subprotocols: c.Subprotocols, SubprotocolRequired: c.SubprotocolRequired,
		MaxConns: c.MaxConns, PingInterval: c.PingInterval, PingTimeout: c.PingTimeout,
		Loops: c.Gnet.Loops, HTTP: HTTP(c), Faults: c.Faults,
	}
}
