package servers

import (
	"fmt"
	"testing"
	"time"

	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/browser"
)

// openJS opens a browser WebSocket to url offering protocols and leaves,
// in window.result, the subprotocol it opened with, or "closed CODE" when
// the browser failed the connection.
const openJS = `(() => {
  window.result = undefined;
  const ws = new WebSocket(%q, %s);
  ws.onopen = () => { window.result = "open " + ws.protocol; ws.close(1000); };
  ws.onclose = e => { if (window.result === undefined) window.result = "closed " + e.code; };
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
