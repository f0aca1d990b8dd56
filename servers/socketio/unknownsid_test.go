package socketio_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/knowngood/knowngood/servers/socketio"
)

// TestUnknownSid: a polling GET, a polling POST and a WebSocket upgrade
// that name a session this process does not hold (as behind a balancer
// without sticky sessions) get Node's engine.io answers, and each is counted
// once in refused_requests{reason="unknown_sid"}; the requests of a live
// session are not.
func TestUnknownSid(t *testing.T) { forEngines(t, testUnknownSid) }

func testUnknownSid(t *testing.T, engine string) {
	tg := start(t, engine, socketio.Empty, nil)
	refused := func() uint64 { return tg.metrics.Snapshot().RefusedRequests[socketio.ReasonUnknownSid] }

	sid := pollingSession(t, tg)
	if code, body := httpDo(t, http.MethodPost, pollURL(tg, sid), "40"); code != 200 || body != "ok" {
		t.Fatalf("POST of a live session: %d %q", code, body)
	}
	if n := refused(); n != 0 {
		t.Fatalf("a live session's requests counted %d unknown_sid", n)
	}

	const want = `{"code":1,"message":"Session ID unknown"}`
	other := "AAAAAAAAAAAAAAAAAAAA" // a sid of the form the engine makes, held by no one here
	if code, body := httpDo(t, http.MethodGet, pollURL(tg, other), ""); code != 400 || body != want {
		t.Errorf("GET with an unknown sid: %d %q, want 400 %s", code, body, want)
	}
	if code, body := httpDo(t, http.MethodPost, pollURL(tg, other), "40"); code != 400 || body != want {
		t.Errorf("POST with an unknown sid: %d %q, want 400 %s", code, body, want)
	}
	conn, resp, err := websocket.DefaultDialer.Dial(wsURL(tg.url)+"&sid="+other, nil)
	if err == nil {
		conn.Close()
		t.Fatal("upgrade with an unknown sid: the WebSocket opened")
	}
	if resp == nil || resp.StatusCode != 400 {
		t.Fatalf("upgrade with an unknown sid: %v, %v; want 400", resp, err)
	}
	// Node's engine.io writes the bare message on the socket it refuses
	// to upgrade.
	if body, _ := io.ReadAll(resp.Body); string(body) != "Session ID unknown" {
		t.Errorf("upgrade with an unknown sid: body %q, want Session ID unknown", body)
	}
	if n := refused(); n != 3 {
		t.Errorf("refused_requests unknown_sid = %d after three requests with an unknown sid, want 3", n)
	}

	// A session that ended is unknown too: the client that comes back
	// after its close is told so, and counted.
	if code, _ := httpDo(t, http.MethodPost, pollURL(tg, sid), "1"); code != 200 {
		t.Fatalf("POST close: %d", code)
	}
	waitFor(t, "the closed session's GET to be refused", func() bool {
		code, body := httpDo(t, http.MethodGet, pollURL(tg, sid), "")
		return code == 400 && strings.Contains(body, "Session ID unknown")
	})
	if n := refused(); n < 4 {
		t.Errorf("refused_requests unknown_sid = %d after a request of a closed session, want at least 4", n)
	}
}
