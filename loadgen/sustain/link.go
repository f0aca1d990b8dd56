package sustain

import (
	"context"
	"encoding/json"
	"errors"
	"net"

	"github.com/zishang520/socket.io/clients/socket/v3"

	"github.com/knowngood/knowngood/loadgen/internal/target"
	"github.com/knowngood/knowngood/loadgen/sioclient"
	"github.com/knowngood/knowngood/loadgen/siolite"
)

// The Socket.IO clients -client chooses from.
const (
	ClientLean       = "lean"       // loadgen/siolite: on event loops (-loop) or a goroutine per connection
	ClientZishang520 = "zishang520" // the zishang520 Go client, through loadgen/sioclient
)

// link is one connected client's connection, whichever library holds it.
type link interface {
	emit(event string, args ...any) error
	// emitWithAck sends event with one string argument, and ask after it
	// unless nil; done gets the ack's string argument and what came back
	// for ask (nil without it), or the error.
	emitWithAck(event, arg string, ask any, done func(arg string, echoed any, err error))
	close()
}

// dial connects client id before ctx's deadline; lost is called once
// when the connection ends without the client closing it. A "broadcast"
// event goes to onPush.
func (r *run) dial(ctx context.Context, id int, lost func()) (link, error) {
	if r.cfg.Client == ClientZishang520 {
		return r.dialZishang(ctx, lost)
	}
	var netDial func(context.Context, string, string) (net.Conn, error)
	if n := len(r.cfg.Sources); n > 0 {
		netDial = target.NetDialer(r.cfg.Sources[id%n], 0).DialContext
	}
	conn, err := siolite.Dial(ctx, siolite.Options{URL: r.cfg.URL, TLS: r.cfg.TLS.Config(), AckTimeout: r.cfg.AckTimeout, NetDial: netDial, Loop: r.loop,
		OnClose: func(error) { lost() },
		OnEvent: func(name string, args []json.RawMessage) {
			if name != "broadcast" {
				return
			}
			var st stamps
			if len(args) > 0 {
				st = stampsOf(args[0])
			}
			r.onPush(st)
		}})
	if err != nil {
		return nil, err
	}
	return leanLink{conn}, nil
}

type leanLink struct{ c *siolite.Conn }

func (l leanLink) emit(event string, args ...any) error { return l.c.Emit(event, args...) }
func (l leanLink) close()                               { _ = l.c.Close() }

func (l leanLink) emitWithAck(event, arg string, ask any, done func(string, any, error)) {
	sent := []any{arg}
	if ask != nil {
		sent = append(sent, ask)
	}
	err := l.c.EmitWithAck(event, sent, func(args []json.RawMessage, err error) {
		var got string
		var echoed any
		if err == nil && len(args) == len(sent) && isQuoted(args[0], arg) {
			got = arg // the common case, without decoding
		} else if err == nil && (len(args) != len(sent) || json.Unmarshal(args[0], &got) != nil) {
			err = errors.New("ack without the payload")
		}
		if err == nil && ask != nil {
			echoed = args[1]
		}
		done(got, echoed, err)
	})
	// ErrClosed: the connection closed between the emit's timer and its
	// write, and the emit never went out; a close by the server is
	// counted as a lost connection, and one by the client (churn, the
	// end) is no ack error.
	if err != nil && !errors.Is(err, siolite.ErrClosed) {
		done("", nil, err)
	}
}

// isQuoted reports whether raw is s as a JSON string with nothing
// escaped, as the payloads sustain sends come back.
func isQuoted(raw json.RawMessage, s string) bool {
	return len(raw) == len(s)+2 && raw[0] == '"' && raw[len(raw)-1] == '"' && string(raw[1:len(raw)-1]) == s
}

// dialZishang connects with the zishang520 client.
func (r *run) dialZishang(ctx context.Context, lost func()) (link, error) {
	opts := r.opts
	opts.OnSocket = func(s *socket.Socket) {
		s.On("broadcast", func(args ...any) {
			var st stamps
			if len(args) > 0 {
				st = stampsOf(args[0])
			}
			r.onPush(st)
		})
		s.On("disconnect", func(...any) { lost() })
	}
	conn, err := sioclient.Dial(opts)
	if err == nil {
		err = conn.Wait(ctx)
	}
	if err != nil {
		if conn != nil {
			go conn.Close() // its goroutines end on their own; the close waits for them
		}
		return nil, err
	}
	return zishangLink{conn}, nil
}

type zishangLink struct{ c *sioclient.Conn }

func (z zishangLink) emit(event string, args ...any) error { return z.c.Socket().Emit(event, args...) }
func (z zishangLink) close()                               { _ = z.c.Close() }

func (z zishangLink) emitWithAck(event, arg string, ask any, done func(string, any, error)) {
	sent := []any{arg}
	if ask != nil {
		sent = append(sent, ask)
	}
	z.c.Socket().EmitWithAck(event, sent...)(func(args []any, err error) {
		got, ok := sioclient.FirstArg[string](args)
		var echoed any
		if err == nil && (!ok || len(args) != len(sent)) {
			err = errors.New("ack without the payload")
		}
		if err == nil && ask != nil {
			echoed = args[1]
		}
		done(got, echoed, err)
	})
}
