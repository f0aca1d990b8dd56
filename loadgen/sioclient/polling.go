package sioclient

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zishang520/socket.io/clients/engine/v3"
	"github.com/zishang520/socket.io/parsers/engine/v3/packet"
	"github.com/zishang520/socket.io/parsers/engine/v3/parser"
	"github.com/zishang520/socket.io/v3/pkg/types"

	"github.com/knowngood/knowngood/loadgen/internal/target"
)

// postTimeout bounds one polling write (an HTTP POST).
const postTimeout = 10 * time.Second

// pollingCtor builds pollingTransports.
type pollingCtor struct {
	gate    *gate
	timeout time.Duration
}

func (*pollingCtor) Name() string { return Polling }

func (c *pollingCtor) New(s engine.Socket, opts engine.SocketOptionsInterface) engine.Transport {
	p := &pollingTransport{Transport: engine.MakeTransport(), gate: c.gate, timeout: cmp.Or(c.timeout, DefaultPollTimeout)}
	p.Prototype(p) // the base Open, Close and Send call our DoOpen, DoClose and Write
	p.Construct(s, opts)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.http = &http.Client{
		Jar: s.CookieJar(),
		Transport: &http.Transport{
			TLSClientConfig: opts.TLSClientConfig(),
			Proxy:           http.ProxyFromEnvironment,
			IdleConnTimeout: 5 * time.Second,
		},
	}
	return p
}

// pollingTransport is Engine.IO's HTTP long-polling transport, in place of
// the client's own, which runs the long-poll GET and the POSTs on one queue
// (so a packet sent while a GET is pending, that is every emit after the
// handshake, waits for the server to end that GET, normally at its next ping,
// 25 s by default) and cannot cancel a request (so a GET that the server
// does not answer keeps its goroutine, and the server's handler, forever).
// Here the GET and the POSTs are separate requests, every request stops
// when the transport closes, and every goroutine is counted by the gate; the
// first GET waits for the gate, like a WebSocket dial.
type pollingTransport struct {
	engine.Transport // the client's base transport: state, events, URIs

	gate    *gate
	timeout time.Duration // of a GET
	http    *http.Client
	ctx     context.Context // cancelled on close: ends every request
	cancel  context.CancelFunc
	polling atomic.Bool // a GET is pending
	post    sync.Mutex  // one POST at a time, as the protocol requires
}

func (p *pollingTransport) Name() string { return Polling }

// DoOpen starts the first GET, the Engine.IO handshake.
func (p *pollingTransport) DoOpen() { p.poll() }

// poll starts a long-poll GET on its own goroutine.
func (p *pollingTransport) poll() {
	p.polling.Store(true)
	p.Emit("poll")
	if !p.gate.start() {
		return // the connection is closing
	}
	go func() {
		defer p.gate.done()
		<-p.gate.open
		data, err := p.request(http.MethodGet, nil, p.timeout)
		if err != nil {
			if p.ctx.Err() == nil {
				p.OnError("fetch read error", err, nil)
			}
			return
		}
		p.OnData(data)
	}()
}

// OnData handles the payload of a GET, and polls again while open.
func (p *pollingTransport) OnData(data types.BufferInterface) {
	packets, _ := parser.Parserv4().DecodePayload(data)
	for _, pkt := range packets {
		if p.ReadyState() == engine.TransportStateOpening && pkt.Type == packet.OPEN {
			p.OnOpen()
		}
		if pkt.Type == packet.CLOSE {
			p.OnClose(errors.New("transport closed by the server"))
			return
		}
		p.OnPacket(pkt)
	}
	if p.ReadyState() == engine.TransportStateClosed {
		return
	}
	p.polling.Store(false)
	p.Emit("pollComplete")
	if p.ReadyState() == engine.TransportStateOpen {
		p.poll()
	}
}

// Write posts packets on their own goroutine: writable again, and "drain",
// once the server has them.
func (p *pollingTransport) Write(packets []*packet.Packet) {
	p.SetWritable(false)
	if !p.gate.start() {
		return
	}
	go func() {
		defer p.gate.done()
		if err := p.postPackets(packets); err != nil {
			if p.ctx.Err() == nil {
				p.OnError("fetch write error", err, nil)
			}
			return
		}
		p.SetWritable(true)
		p.Emit("drain")
	}()
}

// DoClose tells the server (a CLOSE packet, when open), then ends every
// request in flight.
func (p *pollingTransport) DoClose() {
	stop := func() {
		p.cancel()
		p.http.CloseIdleConnections()
	}
	if p.ReadyState() != engine.TransportStateOpen || !p.gate.start() {
		stop()
		return
	}
	go func() {
		defer p.gate.done()
		defer stop()
		_ = p.postPackets([]*packet.Packet{{Type: packet.CLOSE}})
	}()
}

// Pause stops polling for an upgrade: once the pending GET and POST are
// done, it calls onPause.
func (p *pollingTransport) Pause(onPause func()) {
	p.SetReadyState(engine.TransportStatePausing)
	pause := func() {
		p.SetReadyState(engine.TransportStatePaused)
		onPause()
		p.http.CloseIdleConnections() // the transport is done
	}
	if !p.polling.Load() && p.Writable() {
		pause()
		return
	}
	var total atomic.Int32
	if p.polling.Load() {
		total.Add(1)
		_ = p.Once("pollComplete", func(...any) {
			if total.Add(-1) == 0 {
				pause()
			}
		})
	}
	if !p.Writable() {
		total.Add(1)
		_ = p.Once("drain", func(...any) {
			if total.Add(-1) == 0 {
				pause()
			}
		})
	}
}

// postPackets sends packets in one POST.
func (p *pollingTransport) postPackets(packets []*packet.Packet) error {
	data, err := parser.Parserv4().EncodePayload(packets)
	if err != nil {
		return err
	}
	p.post.Lock()
	defer p.post.Unlock()
	_, err = p.request(http.MethodPost, data, postTimeout)
	return err
}

// request makes one polling request and returns the response body.
func (p *pollingTransport) request(method string, body io.Reader, timeout time.Duration) (types.BufferInterface, error) {
	ctx, cancel := context.WithTimeout(p.ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, p.uri().String(), body)
	if err != nil {
		return nil, err
	}
	for k, vs := range p.Opts().ExtraHeaders() {
		req.Header[k] = append([]string(nil), vs...)
	}
	if body != nil {
		req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
	}
	res, err := p.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(res.Body, 64<<20)); err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		// The body says why (a 503 at -max-conns, an injected fault).
		reason, _, _ := strings.Cut(string(buf.Bytes()[:min(buf.Len(), 200)]), "\n")
		return nil, &target.Refused{Status: res.StatusCode, Reason: strings.TrimSpace(reason), What: method}
	}
	return types.NewStringBuffer(buf.Bytes()), nil
}

// uri is the polling URL: the transport's query (EIO, transport, sid).
func (p *pollingTransport) uri() *url.URL {
	scheme := "http"
	if p.Opts().Secure() {
		scheme = "https"
	}
	query := url.Values{}
	for k, vs := range p.Query() {
		query[k] = append([]string(nil), vs...)
	}
	if p.Opts().TimestampRequests() {
		query.Set(p.Opts().TimestampParam(), strconv.FormatInt(time.Now().UnixNano(), 36))
	}
	if !p.SupportsBinary() && !query.Has("sid") {
		query.Set("b64", "1")
	}
	return p.CreateUri(scheme, query)
}
