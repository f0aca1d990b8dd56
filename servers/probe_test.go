package servers

// probe: one Go client per kind of target, enough to connect and echo, for
// the tests that run the same steps against every variant (EMFILE, TLS,
// the hostile mix, the soak).

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/loadgen/sioclient"
	"github.com/knowngood/knowngood/servers/variants"
)

var allVariants = variants.Names()

// variantArgs: a short connect delay for the variants that wait -delay on
// connect, so that a test of something else does not wait for the
// blocking loop.
func variantArgs(v string) []string {
	args := []string{"-variant", v}
	if row(v).Reads("delay") {
		args = append(args, "-delay", "1ms")
	}
	return args
}

// row is the catalog row of the variant called name; the tests name only
// variants of the catalog.
func row(name string) variants.Variant {
	v, ok := variants.Lookup(name)
	if !ok {
		panic("not in the catalog: " + name)
	}
	return v
}

func isSocketIO(v string) bool { return row(v).Family == variants.SocketIO }

// variantRun is one run of a variant: a Socket.IO variant runs on each engine.
type variantRun struct {
	name    string   // the subtest: the variant, and the engine if any
	variant string   // the variant alone
	args    []string // the flags that start it
}

func runsOf(v string) []variantRun {
	if !isSocketIO(v) {
		return []variantRun{{v, v, variantArgs(v)}}
	}
	var runs []variantRun
	for _, e := range append(slices.Clone(sioEngines), nativeGnet) {
		if e == nativeGnet && row(v).Connect == variants.SharedLoop {
			continue // gnet refuses blocking: its loops must never block
		}
		runs = append(runs, variantRun{v + "/" + e, v, append(variantArgs(v), engineFlags(e)...)})
	}
	return runs
}

// allRuns are the runs of every variant.
func allRuns() []variantRun {
	var runs []variantRun
	for _, v := range allVariants {
		runs = append(runs, runsOf(v)...)
	}
	return runs
}

// onePerFamilyAndLibrary names the first variant of each family on each
// library: the fronts whose time bounds differ, once each.
func onePerFamilyAndLibrary() []string {
	seen := map[[2]string]bool{}
	return variants.NamesOf(variants.Where(func(v variants.Variant) bool {
		k := [2]string{string(v.Family), string(v.Library)}
		first := !seen[k]
		seen[k] = true
		return first
	}))
}

// isRawTCP: no framing and no handshake, bytes back as they came.
func isRawTCP(v string) bool { return row(v).Protocol == variants.TCP }

// peer is one connection that echoes.
type peer interface {
	echo(msg string) error
	Close() error
}

// connect opens a connection to variant at addr (TLS when tc is not nil)
// and completes its handshake within timeout.
func connect(variant, addr string, tc *tls.Config, timeout time.Duration) (peer, error) {
	switch {
	case isRawTCP(variant):
		d := &net.Dialer{Timeout: timeout}
		var c net.Conn
		var err error
		if tc != nil {
			c, err = tls.DialWithDialer(d, "tcp", addr, tc)
		} else {
			c, err = d.Dial("tcp", addr)
		}
		if err != nil {
			return nil, err
		}
		return &tcpPeer{c: c, timeout: timeout}, nil
	case isSocketIO(variant):
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		url := "http://" + addr
		if tc != nil {
			url = "https://" + addr
		}
		c, err := sioclient.Connect(ctx, sioclient.Options{URL: url, Transport: sioclient.WebSocket, OpenTimeout: timeout + time.Second, TLS: tc})
		if err != nil {
			return nil, err
		}
		return &sioPeer{c: c, timeout: timeout}, nil
	default:
		c, err := dialWS(wsScheme(tc)+addr+"/", tc, timeout)
		if err != nil {
			return nil, err
		}
		return &wsPeer{c: c, broadcast: row(variant).Family == variants.Broadcast, timeout: timeout}, nil
	}
}

func wsScheme(tc *tls.Config) string {
	if tc != nil {
		return "wss://"
	}
	return "ws://"
}

func dialWS(url string, tc *tls.Config, timeout time.Duration) (*websocket.Conn, error) {
	d := websocket.Dialer{HandshakeTimeout: timeout, TLSClientConfig: tc}
	c, resp, err := d.Dial(url, nil)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("%w (HTTP %d)", err, resp.StatusCode)
		}
		return nil, err
	}
	return c, nil
}

type tcpPeer struct {
	c       net.Conn
	timeout time.Duration
}

func (p *tcpPeer) echo(msg string) error {
	_ = p.c.SetDeadline(time.Now().Add(p.timeout))
	if _, err := p.c.Write([]byte(msg)); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(p.c, got); err != nil {
		return err
	}
	if string(got) != msg {
		return fmt.Errorf("echo %q, want %q", got, msg)
	}
	return nil
}

func (p *tcpPeer) Close() error { return p.c.Close() }

// wsPeer: the echo targets send the message back; the broadcast targets
// answer {"type":"echo","payload":...} with the same message.
type wsPeer struct {
	c         *websocket.Conn
	broadcast bool
	timeout   time.Duration
}

func (p *wsPeer) echo(msg string) error {
	if p.broadcast {
		msg = fmt.Sprintf(`{"type":"echo","payload":%q}`, msg)
	}
	_ = p.c.SetWriteDeadline(time.Now().Add(p.timeout))
	if err := p.c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		return err
	}
	_ = p.c.SetReadDeadline(time.Now().Add(p.timeout))
	_, got, err := p.c.ReadMessage()
	if err != nil {
		return err
	}
	if string(got) != msg {
		return fmt.Errorf("echo %q, want %q", got, msg)
	}
	return nil
}

func (p *wsPeer) Close() error { return p.c.Close() }

// sioPeer is the zishang520 Socket.IO client (through loadgen/sioclient,
// which works around its races): "echo" events and their acks.
type sioPeer struct {
	c       *sioclient.Conn
	timeout time.Duration
}

func (p *sioPeer) echo(msg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	return p.c.Echo(ctx, msg)
}

func (p *sioPeer) Close() error { return p.c.Close() }
