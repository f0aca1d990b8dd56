package enroll

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// opened keeps the context of every connection the loop opened.
type opened struct {
	gnet.BuiltinEventEngine
	ctxs sync.Map
}

func (o *opened) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	o.ctxs.Store(c.Context(), true)
	return nil, gnet.None
}

func newClient(t *testing.T, h gnet.EventHandler) *gnet.Client {
	t.Helper()
	cli, err := gnet.NewClient(h)
	if err == nil {
		err = cli.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Stop() })
	return cli
}

// TestEnroll: the loop gets the socket with its context and has opened
// it when Enroll returns; the caller's socket is closed; many enrolls at
// once all complete.
func TestEnroll(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	h := &opened{}
	cli := newClient(t, h)
	var g Gate
	var wg sync.WaitGroup
	for i := range 3 * Parallel {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			gc, err := g.Enroll(cli, c, i)
			if err != nil {
				t.Errorf("enroll %d: %v", i, err)
				return
			}
			if _, ok := h.ctxs.Load(i); !ok {
				t.Errorf("enroll %d returned before the loop opened it with its context", i)
			}
			if _, err := c.Write([]byte("x")); err == nil {
				t.Error("the caller's socket is still open after Enroll")
			}
			_ = gc.Close()
		})
	}
	wg.Wait()
}

// TestEnrollRefused: a connection the loops cannot take is refused with
// an error that says so, and closed.
func TestEnrollRefused(t *testing.T) {
	cli := newClient(t, &gnet.BuiltinEventEngine{})
	a, b := net.Pipe()
	defer b.Close()
	var g Gate
	if _, err := g.Enroll(cli, a, nil); err == nil {
		t.Fatal("a net.Pipe was enrolled")
	}
	if _, err := a.Write([]byte("x")); err == nil {
		t.Error("the refused connection is still open")
	}
}
