package wsserver

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"math"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/knowngood/knowngood/servers/internal/lifecycle"
	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/wsframe"
	"github.com/knowngood/knowngood/shared/wstest"
)

// fuzzMax is -max-message in the fuzz targets: small, so that a bound
// broken shows at once.
const fuzzMax = 1000

// FuzzGnetFrames feeds the fuzzer's bytes, after the upgrade, to a gnet
// connection, in pieces cut where the fuzzer says, and checks between
// event-loop callbacks that the bytes the server holds for the connection
// (gnet's inbound buffer and the message being reassembled) never exceed
// -max-message plus a frame header, whatever the bytes: a length that
// would overflow a sum included.
func FuzzGnetFrames(f *testing.F) {
	f.Add(append(wstest.Frame(0x01, payload10()), wstest.Header(0x80, math.MaxInt64-9)...), []byte{9, 3})
	f.Add(append(wstest.Frame(0x01, payload10()), wstest.Header(0x80, math.MaxInt64-10)...), []byte{})
	f.Add(wstest.Header(0x82, math.MaxInt64), []byte{1})
	f.Add(wstest.Header(0x82, 1<<63), []byte{})
	f.Add(append(wstest.Frame(0x01, make([]byte, 600)), wstest.Frame(0x80, make([]byte, 399))...), []byte{100, 200})
	f.Add(wstest.Frame(0x88, closeBody(1000, "\xce")), []byte{})
	f.Add(append(wstest.Frame(0x81, []byte("hi")), wstest.Frame(0x88, closeBody(1000, "bye"))...), []byte{2})

	var g *gnetTarget
	// The layer's own settings, not the flags': the package that maps
	// them imports this one.
	build := func(_ config.Config, m *metrics.Metrics, log *slog.Logger) (lifecycle.Target, error) {
		var err error
		g, err = newGnetTarget(Settings{
			Name: "echo-gnet", MaxMessage: fuzzMax, Loops: 1,
			PingInterval: 25 * time.Second, PingTimeout: 20 * time.Second,
			HTTP: lifecycle.HTTPLimits{Header: 5 * time.Second, HeaderBytes: 16 << 10, Idle: 5 * time.Second, Body: time.Minute},
		}, m, log, Options{Handler: Echo{}})
		return g, err
	}
	tg := lifecycletest.Start(f, "echo-gnet", build, lifecycletest.Options{})
	f.Fuzz(func(t *testing.T, in, cuts []byte) {
		if len(cuts) > 16 {
			cuts = cuts[:16]
		}
		c, st := gnetDial(t, tg.Addr, g)
		defer c.Close()
		src := &pieces{src: in, cuts: cuts}
		buf := make([]byte, 64<<10)
		for {
			n, _ := src.Read(buf)
			if n == 0 {
				break
			}
			if _, err := c.Write(buf[:n]); err != nil {
				break // the server has closed
			}
			checkHeld(t, g, st)
		}
		// More than the bound, so that a state that takes in without
		// end shows: a correct server drops it or refuses it.
		if _, err := c.Write(make([]byte, fuzzMax+wsframe.MaxHeader+1)); err == nil {
			for range 3 {
				time.Sleep(time.Millisecond) // some reads happen meanwhile
				checkHeld(t, g, st)
			}
		}
	})
}

// gnetDial upgrades a connection to g and returns it with its gconn.
func gnetDial(t *testing.T, addr string, g *gnetTarget) (net.Conn, *gconn) {
	t.Helper()
	// The new connection is the one the registry did not have before:
	// this process dials one at a time. (Its address is no way to find
	// it: gnet clears an old connection's addresses as it closes.)
	before := map[*gconn]bool{}
	for _, st := range g.snapshot(t.Context()) {
		before[st] = true
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	req := "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " +
		base64.StdEncoding.EncodeToString(key) + "\r\n\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	// The response is all the server sent (the client sent no frame
	// yet): the buffered reader holds nothing more.
	for _, st := range g.snapshot(t.Context()) {
		if !before[st] {
			return c, st
		}
	}
	c.Close()
	t.Fatal("the connection is not in the registry")
	return nil, nil
}

// checkHeld looks, on the connection's event loop, at what it holds.
func checkHeld(t *testing.T, g *gnetTarget, st *gconn) {
	t.Helper()
	held := make(chan int, 1)
	err := st.conn.EventLoop().Execute(t.Context(), gnet.RunnableFunc(func(context.Context) error {
		if st.phase == phaseClosed {
			held <- 0
			return nil
		}
		n := st.conn.InboundBuffered()
		n += st.rd.Held()
		held <- n
		return nil
	}))
	if err != nil {
		return // the engine is stopping
	}
	select {
	case n := <-held:
		if n > fuzzMax+wsframe.MaxHeader {
			t.Fatalf("the server holds %d bytes for the connection; -max-message is %d", n, fuzzMax)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the event loop did not run the check")
	}
}
