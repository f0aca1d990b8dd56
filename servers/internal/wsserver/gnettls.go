package wsserver

import (
	"crypto/tls"
	"io"
	"time"
)

// bridgeTLS serves one TLS connection on gnet, which reads its sockets
// itself and has no TLS layer: the TLS handshake and records are done here,
// on two goroutines, and the plain stream goes to an event loop over a
// socketpair. The loop then does what it does for a plain connection (the
// upgrade, the frames, the accounting); a TLS connection costs those two
// goroutines and two more descriptors besides.
func (g *gnetTarget) bridgeTLS(tc *tls.Conn, accepted time.Time) {
	// As on net/http: a failed TLS handshake is no WebSocket handshake,
	// and is not counted as one.
	_ = tc.SetDeadline(accepted.Add(g.cfg.HTTP.Header))
	if err := tc.Handshake(); err != nil {
		_ = tc.Close()
		return
	}
	_ = tc.SetDeadline(time.Time{})
	inner, outer, err := socketpair()
	if err != nil {
		_ = tc.Close()
		g.acceptError(err)
		return
	}
	g.register(inner, accepted) // gnet duplicates inner and closes it
	fromClient := make(chan struct{})
	go func() {
		defer close(fromClient)
		_, _ = io.Copy(outer, tc)
		_ = outer.CloseWrite() // the loop reads EOF: the client has gone
	}()
	_, _ = io.Copy(tc, outer) // until the loop closes its end
	_ = tc.Close()
	_ = outer.Close()
	<-fromClient
}
