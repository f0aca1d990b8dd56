package target

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseURL(t *testing.T) {
	for in, want := range map[string]URL{
		"ws://127.0.0.1:8080":          {String: "ws://127.0.0.1:8080/", Addr: "127.0.0.1:8080", Host: "127.0.0.1"},
		"ws://[::1]:8080/a/b?c=d":      {String: "ws://[::1]:8080/a/b?c=d", Addr: "[::1]:8080", Host: "::1"},
		"tcp://localhost:7000/":        {String: "tcp://localhost:7000", TCP: true, Addr: "localhost:7000", Host: "localhost"},
		"tcp://127.0.0.1:7000":         {String: "tcp://127.0.0.1:7000", TCP: true, Addr: "127.0.0.1:7000", Host: "127.0.0.1"},
		"ws://echo.example:80/socket/": {String: "ws://echo.example:80/socket/", Addr: "echo.example:80", Host: "echo.example"},
		"wss://127.0.0.1:8443":         {String: "wss://127.0.0.1:8443/", TLS: true, Addr: "127.0.0.1:8443", Host: "127.0.0.1"},
		"wss://localhost:8443/e?x=1":   {String: "wss://localhost:8443/e?x=1", TLS: true, Addr: "localhost:8443", Host: "localhost"},
		"tls://127.0.0.1:7000/":        {String: "tls://127.0.0.1:7000", TCP: true, TLS: true, Addr: "127.0.0.1:7000", Host: "127.0.0.1"},
	} {
		got, err := ParseURL(in)
		if err != nil || got != want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "127.0.0.1:8080", "http://127.0.0.1:8080", "https://h:1/", "wss://h/", "tls://h:1/x", "ws://h/", "tcp://h:1/x", "tcp://h:1?x=1", "ws://u@h:1/", "ws://h:1/#f"} {
		if _, err := ParseURL(in); err == nil {
			t.Errorf("ParseURL(%q): no error", in)
		}
	}
}

// TestDialFromSource: the connection leaves from the source address asked.
func TestDialFromSource(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	u, _ := ParseURL("tcp://" + ln.Addr().String())
	src := netip.MustParseAddr("127.0.0.3")
	c, err := DialTCP(context.Background(), u, Options{Timeout: 5 * time.Second, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.RemoteAddr().(*net.TCPAddr).AddrPort().Addr(); got != src {
		t.Errorf("the server sees %v, want %v", got, src)
	}
}

func TestSourceList(t *testing.T) {
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	for _, tc := range []struct {
		in   []netip.Addr
		want string
	}{
		{nil, "the kernel's choice"},
		{[]netip.Addr{a("127.0.0.1")}, "127.0.0.1"},
		{[]netip.Addr{a("127.0.0.1"), a("127.0.0.2"), a("127.0.0.3")}, "127.0.0.1-127.0.0.3"},
		{[]netip.Addr{a("127.0.0.1"), a("127.0.0.5")}, "127.0.0.1,127.0.0.5"},
	} {
		if got := SourceList(tc.in); got != tc.want {
			t.Errorf("SourceList(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
