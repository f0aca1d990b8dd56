package statsclient

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConfigAbout: the properties a target publishes on /health join its
// configuration under their own keys; a target that publishes none (one
// older than them) gives only its flags and variant name, which the
// verdicts then go by.
func TestConfigAbout(t *testing.T) {
	for _, c := range []struct {
		name, health string
		want         map[string]string
	}{
		{"published", `{"variant":"blocking","protocol":"socket.io","family":"socketio","connect":"shared-loop","config":{"delay":"50ms"}}`,
			map[string]string{"variant": "blocking", "protocol": "socket.io", "family": "socketio", "connect": "shared-loop", "delay": "50ms"}},
		{"older target", `{"variant":"blocking","config":{"delay":"50ms"}}`,
			map[string]string{"variant": "blocking", "delay": "50ms"}},
		{"no config", `{"variant":"echo-tcp","protocol":"tcp","family":"echo"}`,
			map[string]string{"variant": "echo-tcp", "protocol": "tcp", "family": "echo"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(c.health)) }))
			defer srv.Close()
			client := New(srv.URL)
			defer client.Close()
			got, err := client.Config(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, c.want) {
				t.Errorf("Config = %v, want %v", got, c.want)
			}
		})
	}
}
