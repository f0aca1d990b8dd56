package adminui

import (
	"net"
	"net/url"
	"strings"
	"sync"
)

// Link is what a Socket.IO target started with -admin-ui and its admin
// listener learn of each other once both listen (their ports may be
// picked then: -addr 127.0.0.1:0): the target answers the page's origin
// cross-origin (AllowsOrigin), and the page's connection form is
// pre-filled with the target's address (TargetURL).
type Link struct {
	// Path is the target's Socket.IO path as the form's path field takes
	// it: -path without its trailing slash (/socket.io).
	Path string
	// WSOnly: the target does not serve polling (-engine native-gnet,
	// -transports websocket): the form's "WebSocket only".
	WSOnly bool
	// TLS: the target speaks TLS (-tls-cert), so the form says https.
	TLS bool

	mu     sync.RWMutex
	target string // host:port the target listens on
	admin  string // host:port the admin listener is on; "" when off
}

// NewLink is the Link of a target served at path (with or without its
// trailing slash).
func NewLink(path string, wsOnly, tls bool) *Link {
	return &Link{Path: strings.TrimSuffix(path, "/"), WSOnly: wsOnly, TLS: tls}
}

// Listening records where the target and the admin listener listen
// ("" for an admin listener that is off).
func (l *Link) Listening(target, admin string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.target, l.admin = target, admin
}

func (l *Link) addrs() (target, admin string) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.target, l.admin
}

// AllowsOrigin reports whether origin is a page of the admin listener,
// which the target then answers cross-origin (with credentials, as the
// page's socket.io-client asks): http, the admin listener's port, and as
// host any name or address when the listener binds every address (the
// default :9100), a loopback one (localhost, 127.0.0.1, [::1]) when it
// binds a loopback address, and otherwise the very address it binds.
func (l *Link) AllowsOrigin(origin string) bool {
	if l == nil || origin == "" {
		return false
	}
	_, admin := l.addrs()
	host, port, err := net.SplitHostPort(admin)
	if err != nil {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || u.Port() != port || u.Path != "" || u.User != nil {
		return false
	}
	bound := net.ParseIP(host)
	got := u.Hostname()
	switch {
	case host == "" || bound != nil && bound.IsUnspecified():
		return true
	case bound != nil && bound.IsLoopback():
		ip := net.ParseIP(got)
		return strings.EqualFold(got, "localhost") || ip != nil && ip.IsLoopback()
	}
	ip := net.ParseIP(got)
	return strings.EqualFold(got, host) || ip != nil && bound != nil && ip.Equal(bound)
}

// TargetURL is the server URL the page's form takes (http://HOST:PORT, or
// https), for a page asked for with Host pageHost: the target's own host
// when it binds a given address, the page's when it binds every address
// (the browser reached the admin listener there, and the target listens
// there too). "" before Listening.
func (l *Link) TargetURL(pageHost string) string {
	if l == nil {
		return ""
	}
	target, _ := l.addrs()
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if h, _, err := net.SplitHostPort(pageHost); err == nil {
			host = h
		} else if pageHost != "" {
			host = strings.Trim(pageHost, "[]")
		}
	}
	scheme := "http"
	if l.TLS {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
