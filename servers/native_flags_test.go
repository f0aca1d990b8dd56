package servers

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/knowngood/knowngood/shared/cluster/clustertest"
)

// TestNativeTakesClusterFlags: knowngood -engine native starts with -redis
// (its /health requiring Redis answers 200, "redis":"up") and with
// -fault-leak-timers, which main once refused on that engine.
func TestNativeTakesClusterFlags(t *testing.T) {
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
