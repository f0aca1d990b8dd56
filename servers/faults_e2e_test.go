package servers

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/shared/protocol"
)

// runLoadgen runs a loadgen scenario with -json - and decodes the report.
func runLoadgen(t *testing.T, report any, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness.LoadgenT(t), append(args, "-json", "-")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err := harness.LoadgenRan(err, out); err != nil { // the faults fail the run: the report is read all the same
		t.Fatalf("loadgen %v: %v\n%s", args, err, stderr.String())
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), report); err != nil {
		t.Fatalf("loadgen printed %q: %v", out, err)
	}
	t.Logf("loadgen %s:\n%s", args[0], stderr.String())
}

// TestFaultsWithLoadgen: loadgen's reports attribute the failures it sees
// to the faults the target injected, with the count: every failed
// handshake to a 503 of -fault-reject, every connection ended by 1011 to
// -fault-close-after, every lost echo to -fault-drop. (In sync mode a
// connection whose message was dropped waits for it until the end: one
// lost message per drop.)
func TestFaultsWithLoadgen(t *testing.T) {
	t.Parallel()
	for _, engine := range sioEngines {
		t.Run("handshake reject/"+engine, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, "-variant", "empty", "-engine", engine, "-fault-reject", "0.2")
			var rep struct {
				Attempts, Connected, Failed int
				Errors                      map[string]int
				Server                      struct{ Faults map[string]uint64 }
			}
			runLoadgen(t, &rep, "handshake", "-url", s.url, "-n", "200", "-admin", s.admin)
			if rep.Failed == 0 || uint64(rep.Failed) != rep.Server.Faults["reject"] {
				t.Errorf("client: %d failed (%v); server: faults %v; want the same count, not 0", rep.Failed, rep.Errors, rep.Server.Faults)
			}
		})
	}
	for _, v := range []string{"echo-gorilla", "echo-gnet"} {
		t.Run(v+" close-after", func(t *testing.T) {
			t.Parallel()
			// 10 messages: a busy host has made only 75 round trips per
			// connection in the 1 s window. So few may all go before
			// the report's server view of the window starts: compare
			// the whole run, as loadgen's verdicts do.
			s := startServer(t, "-variant", v, "-fault-close-after", "10")
			var rep struct {
				Errors map[string]struct{ Count int }
			}
			before := s.stats(t)
			runLoadgen(t, &rep, "echo", "-url", "ws"+strings.TrimPrefix(s.url, "http")+"/", "-c", "4", "-duration", "1s", "-warmup", "0s", "-admin", s.admin)
			whole := protocol.Diff(before, s.stats(t))
			if n := rep.Errors["read"].Count; n != 4 || whole.Faults["close_after"] != 4 {
				t.Errorf("client: %d connections ended by a read error; server: faults %v; want 4 and close_after 4", n, whole.Faults)
			}
		})
		t.Run(v+" drop", func(t *testing.T) {
			t.Parallel()
			s := startServer(t, "-variant", v, "-fault-drop", "0.01")
			var rep struct {
				Errors map[string]struct{ Count int }
				Server struct{ Faults map[string]uint64 }
			}
			// The report's server view covers the window; a message dropped
			// while the last echoes drain is after it. Compare the whole run.
			before := s.stats(t)
			runLoadgen(t, &rep, "echo", "-url", "ws"+strings.TrimPrefix(s.url, "http")+"/", "-c", "4",
				"-duration", "1s", "-warmup", "0s", "-timeout", "500ms", "-admin", s.admin)
			whole := protocol.Diff(before, s.stats(t))
			if lost, dropped := rep.Errors["lost"].Count, whole.Faults["drop"]; lost == 0 || uint64(lost) != dropped {
				t.Errorf("client: %d lost; server: %d dropped; want the same, not 0 (errors %v)", lost, dropped, rep.Errors)
			}
		})
	}
}
