package servers

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/browser"
	"github.com/knowngood/knowngood/shared/wstest"
)

// openJS opens a browser WebSocket to url offering protocols and leaves,
// in window.result, the subprotocol it opened with, or "closed CODE" when
// the browser failed the connection. Only the latest socket writes it: the
// close of the one before, which it closed itself, may come after.
const openJS = `(() => {
  window.result = undefined;
  const ws = new WebSocket(%q, %s);
  window.latest = ws;
  ws.onopen = () => { if (window.latest === ws) window.result = "open " + ws.protocol; ws.close(1000); };
  ws.onclose = e => { if (window.latest === ws && window.result === undefined) window.result = "closed " + e.code; };
  return true;
})()`

// TestBrowserSubprotocol: a browser's WebSocket that offers subprotocols
// (as graphql-ws, MQTT and OCPP clients do, with new WebSocket(url,
// protocols)) opens on every WebSocket target started with -subprotocols,
// with the first it offered that the target serves. A browser fails a
// connection whose answer names none of its offers: that is what the
// target's refusal (-subprotocol-required) and a target without the flag
// look like to a page.
func TestBrowserSubprotocol(t *testing.T) {
	t.Parallel()
	b := browser.For(t)
	for _, v := range variants.Where(variants.InFamily(variants.Echo), variants.Speaks(variants.WebSocket)) {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			served := startServer(t, "-variant", v.Name, "-subprotocols", "graphql-transport-ws,mqtt")
			required := startServer(t, "-variant", v.Name, "-subprotocols", "mqtt", "-subprotocol-required")
			plain := startServer(t, "-variant", v.Name)
			p := b.Open(t, served.admin+"/health")
			open := func(s *server, protocols string) string {
				t.Helper()
				browser.Eval[bool](t, p, fmt.Sprintf(openJS, "ws://"+s.Addr+"/", protocols))
				p.WaitFor(t, "the WebSocket opened or closed", "window.result !== undefined", 10*time.Second)
				return browser.Eval[string](t, p, "window.result")
			}
			for _, c := range []struct {
				s         *server
				protocols string
				want      string
			}{
				{served, `["v1.ocpp", "mqtt", "graphql-transport-ws"]`, "open mqtt"},
				{served, `"graphql-transport-ws"`, "open graphql-transport-ws"},
				{served, `[]`, "open "},
				{served, `["v1.ocpp"]`, "closed 1006"},
				{required, `["v1.ocpp"]`, "closed 1006"},
				{required, `["mqtt"]`, "open mqtt"},
				{plain, `["mqtt"]`, "closed 1006"},
			} {
				if got := open(c.s, c.protocols); got != c.want {
					t.Errorf("offering %s: %q, want %q", c.protocols, got, c.want)
				}
			}
			if got := served.stats(t).Subprotocols; got["mqtt"] != 1 || got["graphql-transport-ws"] != 1 {
				t.Errorf("subprotocols %v, want mqtt 1 and graphql-transport-ws 1", got)
			}
		})
	}
}

// answer is what a server answers an upgrade with extra header lines: its
// status, the subprotocol of a 101, the body of a refusal.
func answer(t *testing.T, addr string, extra ...string) string {
	t.Helper()
	c, br := wstest.Dial(t, addr)
	if _, err := io.WriteString(c, wstest.UpgradeRequest(extra...)); err != nil {
		t.Fatal(err)
	}
	resp := wstest.ReadResponse(t, br)
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fmt.Sprintf("101 %q", resp.Header.Get("Sec-WebSocket-Protocol"))
	}
	body, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
}

// TestSubprotocolsBesideNodeWS: the same upgrade requests to Node's ws
// (a server that serves the subprotocols as ws's handleProtocols and
// verifyClient do it) and to each WebSocket echo target with the same
// settings get the same status and subprotocol; a refusal's body is ws's
// for a malformed header, and names the flag for a required one where ws
// says only "Unauthorized". Without any setting the two differ: ws answers
// a client's first subprotocol whatever it is, the targets none (as
// gorilla and coder do), which the last case pins.
func TestSubprotocolsBesideNodeWS(t *testing.T) {
	t.Parallel()
	need(t, "ws (scripts/node_modules)", haveNodeWSEcho())
	settings := []struct {
		name string
		env  []string
		args []string
	}{
		{"served", []string{"KG_SUBPROTOCOLS=mqtt,graphql-transport-ws"}, []string{"-subprotocols", "mqtt,graphql-transport-ws"}},
		{"required", []string{"KG_SUBPROTOCOLS=mqtt", "KG_SUBPROTOCOL_REQUIRED=true"}, []string{"-subprotocols", "mqtt", "-subprotocol-required"}},
		{"none", nil, nil},
	}
	offers := []string{"v1.ocpp, graphql-transport-ws, mqtt", "v1.ocpp", "mqtt,,v1", ""}
	for _, v := range variants.Where(variants.InFamily(variants.Echo), variants.Speaks(variants.WebSocket)) {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			for _, set := range settings {
				node := startNodeScript(t, set.env, "ws-echo-server.mjs", "0").Addr
				target := startServer(t, append([]string{"-variant", v.Name}, set.args...)...)
				for _, offer := range offers {
					var extra []string
					if offer != "" {
						extra = append(extra, "Sec-WebSocket-Protocol: "+offer+"\r\n")
					}
					ws, ours := answer(t, node, extra...), answer(t, target.Addr, extra...)
					wsStatus, oursStatus := strings.Fields(ws)[0], strings.Fields(ours)[0]
					switch {
					case set.name == "none" && offer != "":
						t.Logf("%s, no settings, offering %q: ws %s, knowngood %s (ws reads the header by default, the targets only with -subprotocols)", v.Name, offer, ws, ours)
						if ours != `101 ""` {
							t.Errorf("without -subprotocols, offering %q: %s, want 101 and no subprotocol", offer, ours)
						}
					case wsStatus != oursStatus:
						t.Errorf("%s, offering %q: ws %s, knowngood %s", set.name, offer, ws, ours)
					case wsStatus == "101" && ws != ours:
						t.Errorf("%s, offering %q: ws %s, knowngood %s", set.name, offer, ws, ours)
					case wsStatus == "400" && ws != ours:
						t.Errorf("%s, offering %q: ws %q, knowngood %q", set.name, offer, ws, ours)
					}
				}
			}
		})
	}
}
