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
	p := &pollingTransport{Transport: engine.MakeTransport(), socket: s, gate: c.gate, timeout: cmp.Or(c.timeout, DefaultPollTimeout)}
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

	socket  engine.Socket // whose write buffer takes back what an upgrade caught
	gate    *gate
	timeout time.Duration // of a GET
	http    *http.Client
	ctx     context.Context // cancelled on close: ends every request
	cancel  context.CancelFunc
	post    sync.Mutex // one POST at a time, as the protocol requires

	// mu orders Pause against the end of a GET and of a POST: Pause checks
	// what is pending and waits for it in one step, and each end marks
	// itself done (and decides whether to poll again) in one step, so
	// that an end never falls between Pause's check and its wait.
	mu      sync.Mutex
	polling bool   // a GET is pending, or about to start
	writing bool   // a POST of Write is pending
	onPause func() // Pause's, until nothing is pending
}

func (p *pollingTransport) Name() string { return Polling }

// DoOpen starts the first GET, the Engine.IO handshake.
func (p *pollingTransport) DoOpen() {
	p.mu.Lock()
	p.polling = true
	p.mu.Unlock()
	p.poll()
}

// poll starts a long-poll GET on its own goroutine; the caller has set
// polling.
func (p *pollingTransport) poll() {
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
	p.mu.Lock()
	if p.ReadyState() == engine.TransportStateClosed {
		p.mu.Unlock()
		return
	}
	// Poll again while open; once Pause has begun, the GET ends here.
	again := p.ReadyState() == engine.TransportStateOpen
	p.polling = again
	p.unlockEmit("pollComplete")
	if again {
		p.poll()
	}
}

// Send is Write: the base's Send drops packets when the transport is not
// open, which an upgrade can make it mid-flush (see Write).
func (p *pollingTransport) Send(packets []*packet.Packet) { p.Write(packets) }

// Write posts packets on their own goroutine: writable again, and "drain",
// once the server has them.
//
// The client's socket looks for an upgrade under way before it takes its
// buffer to write, and the upgrade's probe, on another goroutine, can
// begin pausing this transport between the two: Node's client, on one
// thread, cannot interleave them. Packets that arrive once the transport
// is pausing go back to the front of the socket's buffer, which the socket
// flushes on the new transport after the upgrade (it waits for the flush
// in progress, so nothing overtakes them): an emit is never dropped, and
// never posted to a polling transport the server has already left.
func (p *pollingTransport) Write(packets []*packet.Packet) {
	p.mu.Lock()
	switch p.ReadyState() {
	case engine.TransportStateOpen:
	case engine.TransportStatePausing, engine.TransportStatePaused:
		p.mu.Unlock()
		p.socket.WriteBuffer().Unshift(packets...)
		return
	default: // closed, as the base's Send: the socket is closing
		p.mu.Unlock()
		return
	}
	p.SetWritable(false)
	p.writing = true
	p.mu.Unlock()
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
		p.mu.Lock()
		p.SetWritable(true)
		p.writing = false
		p.unlockEmit("drain")
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
// done, it calls onPause, once. The client then sends its upgrade packet on
// the new transport, and everything the server writes after that goes
// there: a GET or a POST that ended unseen between a check and a wait here
// would leave the transport pausing for good, neither polling nor
// upgraded, and every packet after it on the server, undelivered.
func (p *pollingTransport) Pause(onPause func()) {
	p.mu.Lock()
	p.SetReadyState(engine.TransportStatePausing)
	p.onPause = func() {
		p.SetReadyState(engine.TransportStatePaused)
		onPause()
		p.http.CloseIdleConnections() // the transport is done
	}
	p.unlockEmit("")
}

// unlockEmit unlocks mu, which the caller holds, emits event ("" for
// none), and then calls Pause's callback if nothing is pending any more
// (pausedLocked): a Pause that waited for this poll or write ends after
// the transport has said so.
func (p *pollingTransport) unlockEmit(event types.EventName) {
	paused := p.pausedLocked()
	p.mu.Unlock()
	if event != "" {
		p.Emit(event)
	}
	if paused != nil {
		paused()
	}
}

// pausedLocked returns Pause's callback, for the caller to call after
// unlocking mu, once nothing is pending; nil otherwise, or without a Pause.
func (p *pollingTransport) pausedLocked() func() {
	if p.onPause == nil || p.polling || p.writing {
		return nil
	}
	paused := p.onPause
	p.onPause = nil
	return paused
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
