package watch

import (
	"errors"
	"flag"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/knowngood/knowngood/shared/protocol"
)

func TestParseFlags(t *testing.T) {
	cfg, err := ParseFlags([]string{"-admin", "127.0.0.1:9100", "-deadline", "2s", "--", "k6", "run", "x.js"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Admin != "http://127.0.0.1:9100" || strings.Join(cfg.Command, " ") != "k6 run x.js" || cfg.Deadline.String() != "2s" {
		t.Errorf("config %+v", cfg)
	}
	if _, err := ParseFlags([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
	for args, want := range map[string]string{
		"-admin http://127.0.0.1:9100":             "no command",
		"-admin http://127.0.0.1:9100 --":          "no command after --",
		"-- k6 run x.js":                           "flag -admin is required",
		"-client-ok 5 -admin http://x:1 -- k6 run": "flag -client-ok: ",
		"-deadline soon -admin http://x:1 -- k6":   "-deadline",
	} {
		_, err := ParseFlags(strings.Fields(args))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", args, err, want)
		}
	}
}

func TestDashboards(t *testing.T) {
	if got := dashboards("http://a:1,http://b:2/"); got != "http://a:1/ http://b:2/" {
		t.Errorf("dashboards: %q", got)
	}
}

// TestSocketIO: a target that publishes its protocol on /health is told
// by it, whatever its name; one that does not, by knowngood's naming (the
// fallback), where an empty name is none.
func TestSocketIO(t *testing.T) {
	for _, c := range []struct {
		variant, proto string
		want           bool
	}{
		{"mine", "socket.io", true}, {"echo-mine", "socket.io", true}, {"empty", "websocket", false}, {"mine", "tcp", false},
		{"empty", "", true}, {"blocking", "", true}, {"echo-gorilla", "", false}, {"echo-tcp", "", false}, {"broadcast-gnet", "", false}, {"", "", false},
	} {
		if got := socketIO(c.variant, c.proto); got != c.want {
			t.Errorf("socketIO(%q, %q) = %v, want %v", c.variant, c.proto, got, c.want)
		}
	}
}

// TestOutcome: the tool's counts only when it gave them; the server's
// always.
func TestOutcome(t *testing.T) {
	r := &Report{ExitCode: 1, Server: protocol.Stats{Handshakes: map[string]uint64{protocol.ResultOK: 9, protocol.ResultFailed: 1}, Faults: map[string]uint64{"drop": 2}}}
	r.Attempts, r.OK, r.Sent, r.Received = 10, 9, -1, -1
	out := r.Outcome()
	v := out.Metrics
	if out.Attempts != 10 || out.Connected != 9 || v["success"] != 0.9 || v["server_ok"] != 9 || v["server_failed"] != 1 || v["faults"] != 2 || v["exit_code"] != 1 {
		t.Errorf("outcome %+v", out)
	}
	if _, ok := v["sent"]; ok {
		t.Error("an unknown sent count became a metric")
	}
	if orNone(nil) != "none" {
		t.Errorf("orNone(nil) = %q", orNone(nil))
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
