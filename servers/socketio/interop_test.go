package socketio_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zishang520/socket.io/clients/engine/v3"
	csocket "github.com/zishang520/socket.io/clients/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"

	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/faults"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/protocol"
)

// pollingOnly connects the zishang520 Go client over polling alone and
// reports whether it connected within wait. It sends every POST chunked,
// without Content-Length. The listener is attached before the connection
// starts (with autoConnect, the default, a fast CONNECT ack can come
// first). The client also loses the connection when its transport reads
// the server's OPEN before the Manager listens for it (loadgen/sioclient
// says how); that is the client's defect, not the server's, so a client
// that saw nothing is replaced, up to three times, within wait.
func pollingOnly(t *testing.T, url string, wait time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(wait)
	for range 3 {
		if pollingAttempt(t, url, time.Until(deadline)/2) {
			return true
		}
	}
	return false
}

func pollingAttempt(t *testing.T, url string, wait time.Duration) bool {
	t.Helper()
	opts := csocket.DefaultOptions()
	opts.SetForceNew(true)
	opts.SetReconnection(false)
	opts.SetAutoConnect(false)
	opts.SetTransports(types.NewSet[engine.TransportCtor](&engine.PollingBuilder{}))
	sock := csocket.NewManager(url, opts).Socket("/", opts)
	defer sock.Disconnect()
	connected := make(chan struct{}, 1)
	sock.Once("connect", func(...any) { connected <- struct{}{} })
	sock.Connect()
	select {
	case <-connected:
		return true
	case <-time.After(wait):
		return false
	}
}

// chunkedPost POSTs body to a polling session without Content-Length.
func chunkedPost(t *testing.T, url, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, io.MultiReader(strings.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// TestChunkedPost: the zishang520 Go client's polling POSTs, chunked
// without Content-Length, which python-engineio 4 reads as empty. The
// targets serve them (as Node's engine.io does) and count each in
// interop_requests{kind="chunked_post"}; with -fault-drop-chunked-post
// they answer as python-engineio does, 200 "OK" with the packets dropped,
// so that the client never connects, as against python-socketio.
func TestChunkedPost(t *testing.T) { forEngines(t, testChunkedPost) }

func testChunkedPost(t *testing.T, engine string) {
	// The client runs its long-poll GET and its POSTs on one queue: when
	// the GET after the OPEN is queued before the CONNECT's POST (more
	// likely on a busy machine), the CONNECT goes out only once the next
	// ping ends that GET. A short ping interval keeps that wait short.
	served := start(t, engine, socketio.Empty, func(c *config.Config) { c.PingInterval = time.Second })
	if !pollingOnly(t, served.url, 20*time.Second) {
		t.Fatal("the Go client over polling did not connect")
	}
	if got := served.metrics.Snapshot().InteropRequests[metrics.InteropChunkedPost]; got == 0 {
		t.Errorf("interop_requests{chunked_post} = 0 after the Go client's polling connect")
	}

	dropped := start(t, engine, socketio.Empty, func(c *config.Config) { c.Faults.DropChunkedPost = true })
	sid := pollingSession(t, dropped)
	code, ctype, body := chunkedPost(t, pollURL(dropped, sid), "40")
	if code != 200 || ctype != "text/plain" || body != "OK" {
		t.Errorf("a chunked CONNECT answered %d %q %q, want python-engineio's 200 text/plain \"OK\"", code, ctype, body)
	}
	// With Content-Length, the same POST is served.
	if code, body := httpDo(t, http.MethodPost, pollURL(dropped, sid), "40"); code != 200 || body != "ok" {
		t.Errorf("a CONNECT with Content-Length answered %d %q", code, body)
	}
	if code, body := httpDo(t, http.MethodGet, pollURL(dropped, sid), ""); !strings.HasPrefix(body, "40{") {
		t.Errorf("the GET after the CONNECT answered %d %q, want one CONNECT ack", code, body)
	}
	if pollingOnly(t, dropped.url, 2*time.Second) {
		t.Error("the Go client over polling connected despite -fault-drop-chunked-post")
	}
	st := dropped.metrics.Snapshot()
	if st.Faults[faults.KindDropChunkedPost] == 0 || st.InteropRequests[metrics.InteropChunkedPost] != st.Faults[faults.KindDropChunkedPost] {
		t.Errorf("faults %v, interop %v: want every chunked POST counted in both", st.Faults, st.InteropRequests)
	}
	if got := st.Handshakes[protocol.ResultOK]; got != 1 {
		t.Errorf("%d handshakes ok, want the one CONNECT sent with Content-Length", got)
	}
}

// TestChunkedPostSwitched: -fault-drop-chunked-post switched while the
// target serves (POST /control/fault) applies to the next POST: the Go
// client over polling, which sends its POSTs chunked, does not connect
// while it is on, and connects once it is off.
func TestChunkedPostSwitched(t *testing.T) { forEngines(t, testChunkedPostSwitched) }

func testChunkedPostSwitched(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, func(c *config.Config) { c.PingInterval = time.Second })
	f := tg.srv.Faults()
	f.Set(faults.Modes{DropChunkedPost: true})
	if pollingOnly(t, tg.url, 2*time.Second) {
		t.Error("the Go client over polling connected with drop-chunked-post switched on")
	}
	if got := tg.metrics.Snapshot().Faults[faults.KindDropChunkedPost]; got == 0 {
		t.Error("faults{drop_chunked_post} = 0 with it switched on")
	}
	f.Set(faults.Modes{})
	if !pollingOnly(t, tg.url, 20*time.Second) {
		t.Error("the Go client over polling did not connect with drop-chunked-post switched off")
	}
}
