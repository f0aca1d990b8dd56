package servers

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/clustertest"
)

// TestNativeTakesClusterFlags: knowngood -engine native starts with -redis
// (its /health requiring Redis answers 200, "redis":"up") and with
// -fault-leak-timers, which main once refused on that engine.
func TestNativeTakesClusterFlags(t *testing.T) {
	t.Parallel()
	r := clustertest.StartRedis(t)
	s := startServer(t, "-variant", "empty", "-engine", "native", "-redis", r.URL, "-fault-leak-timers", "1s")
	body := ""
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(s.admin + "/health?require=redis")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			body = string(b)
			var health struct{ Redis string }
			if resp.StatusCode == http.StatusOK && json.Unmarshal(b, &health) == nil && health.Redis == "up" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health?require=redis: %q, %v after 10s; want 200 with redis up", body, err)
		}
	}
}

// TestNativeTakesAllowEIO3: knowngood -engine native and native-gnet
// start with -allow-eio3, which main once refused on that engine, and open an Engine.IO v3 session: over polling its open
// packet comes as a v3 record ("<length>:0{...").
func TestNativeTakesAllowEIO3(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"native", nativeGnet} {
		s := startServer(t, append(engineFlags(engine), "-variant", "empty", "-allow-eio3")...)
		if status, body := openEIO3(t, s.url, "websocket"); status != http.StatusSwitchingProtocols {
			t.Errorf("%s: EIO=3 WebSocket open answered %d %s; want 101", engine, status, body)
		}
		if engine == nativeGnet {
			continue // WebSocket sessions only
		}
		status, body := openEIO3(t, s.url, "polling")
		length, open, found := strings.Cut(body, ":")
		if status != http.StatusOK || !found || !strings.HasPrefix(open, `0{"sid":`) || length == "" {
			t.Errorf("%s: EIO=3 polling open answered %d %q; want 200 and a v3 record of the open packet", engine, status, body)
		}
	}
}
