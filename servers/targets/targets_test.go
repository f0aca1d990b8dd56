package targets_test

import (
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/servers/targets"
	"github.com/knowngood/knowngood/servers/variants"
)

// TestEveryRowBuilds: every catalog row has a constructor, and every
// constructor a catalog row.
func TestEveryRowBuilds(t *testing.T) {
	for _, name := range variants.Names() {
		if b, ok := targets.For(name); !ok || b == nil {
			t.Errorf("variant %s has no constructor", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(targets.All())) {
		if _, ok := variants.Lookup(name); !ok {
			t.Errorf("constructor %s has no catalog row", name)
		}
	}
}

// TestMetricsByFamily: each variant, built as main builds it and serving,
// exposes on /metrics the series every variant has, and the broadcast
// series only when it is a broadcast variant (echo-tcp and the Socket.IO
// variants never fan out through a hub, so they do not show a fan-out
// histogram that would stay empty).
func TestMetricsByFamily(t *testing.T) {
	for _, v := range variants.All() {
		t.Run(v.Name, func(t *testing.T) {
			b, _ := targets.For(v.Name)
			tg := lifecycletest.Start(t, v.Name, lifecycletest.Build(b), lifecycletest.Options{Admin: true})
			resp, err := http.Get(tg.AdminURL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			text := string(body)
			for _, name := range []string{"knowngood_connections_active", "knowngood_connections_total", "knowngood_messages_received_total", "knowngood_build_info"} {
				if !strings.Contains(text, "\n"+name) {
					t.Errorf("/metrics lacks %s", name)
				}
			}
			broadcast := v.Family == variants.Broadcast
			for _, name := range []string{"knowngood_broadcast_fanout_seconds", "knowngood_broadcast_dropped_total"} {
				if has := strings.Contains(text, "# TYPE "+name+" "); has != broadcast {
					t.Errorf("/metrics has %s: %v, want %v (family %s)", name, has, broadcast, v.Family)
				}
			}
		})
	}
}
