package servers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/scripts/harness"
	"github.com/knowngood/knowngood/servers/internal/admin/dashboardtest"
	"github.com/knowngood/knowngood/servers/variants"
	"github.com/knowngood/knowngood/shared/browser"
)

// dashboardLoads is, for each family, the loadgen run that moves the
// figures its dashboard shows, light enough to share the machine: its
// words after the target's address, and the rate that must move.
var dashboardLoads = map[variants.Family]struct {
	args func(addr string) []string
	rate string
}{
	variants.SocketIO: {func(addr string) []string {
		return []string{"handshake", "-url", "http://" + addr, "-n", "50", "-transport", "websocket", "-admin", ""}
	}, "hs_rate"},
	variants.Echo: {func(addr string) []string {
		return []string{"echo", "-url", "ws://" + addr + "/", "-c", "4", "-mode", "rate", "-rate", "500", "-warmup", "0s", "-duration", "20s", "-admin", ""}
	}, "in_rate"},
	variants.Broadcast: {func(addr string) []string {
		return []string{"broadcast", "-url", "ws://" + addr + "/", "-subscribers", "20", "-senders", "2", "-rate", "50", "-duration", "20s", "-admin", ""}
	}, "out_rate"},
}

// TestDashboardUnderLoad: for the first variant of each family in the
// catalog, the dashboard in Chromium shows its figures move while loadgen
// drives it, and every figure agrees with /stats read just before and just
// after (see dashboardtest.Between for the bounds), with no console error
// and no chart text clipped. DASHBOARD_SCREENSHOT=DIR keeps a picture of
// each page under load.
func TestDashboardUnderLoad(t *testing.T) {
	t.Parallel()
	b := browser.For(t)
	loadgen := harness.LoadgenT(t)
	for _, family := range []variants.Family{variants.SocketIO, variants.Echo, variants.Broadcast} {
		v := variants.ByFamily(family)[0]
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			load := dashboardLoads[family]
			s := startServer(t, "-variant", v.Name)
			p := b.Open(t, s.admin+"/")
			p.WaitFor(t, "the first figures", dashboardtest.PollsJS+" >= 1", 20*time.Second)
			before := s.stats(t)

			ctx, stop := context.WithCancel(context.Background())
			done := runLoad(ctx, t, loadgen, load.args(s.Addr), family == variants.SocketIO)
			t.Cleanup(func() { stop(); <-done })

			rateJS := fmt.Sprintf(`Number(document.querySelector('td[data-col="0"][data-key="%s"]').dataset.value) > 0`, load.rate)
			p.WaitFor(t, load.rate+" above 0", rateJS, 60*time.Second)
			// The two documents the page shows next were both read after
			// low and before high.
			low := s.stats(t)
			polls := dashboardtest.Read(t, p).Polls
			p.WaitFor(t, "three more refreshes", fmt.Sprintf("%s >= %d", dashboardtest.PollsJS, polls+3), 20*time.Second)
			page := dashboardtest.Read(t, p)
			high := s.stats(t)
			for _, bad := range dashboardtest.Between(page.Columns["0"], low, high) {
				t.Error(bad)
			}
			if moved := dashboardtest.Counters(high); moved["opened"] == dashboardtest.Counters(before)["opened"] {
				t.Errorf("no connection opened during the load: %v", moved)
			}
			if dir := os.Getenv("DASHBOARD_SCREENSHOT"); dir != "" {
				p.Screenshot(t, filepath.Join(dir, "dashboard-"+v.Name+".png"))
			}
			p.TextLayout(t)
			p.NoProblems(t)
		})
	}
}

// runLoad runs loadgen with args until ctx ends or it exits; again runs it
// again each time it exits (a handshake run is over in a moment), up to a
// bound. The channel closes when the last run has ended.
func runLoad(ctx context.Context, t *testing.T, loadgen string, args []string, again bool) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			out, err := exec.CommandContext(ctx, loadgen, args...).CombinedOutput()
			if ctx.Err() != nil {
				return
			}
			if err != nil && harness.LoadgenRan(err, out) != nil {
				t.Errorf("loadgen %s: %v\n%s", strings.Join(args, " "), err, out)
				return
			}
			if !again {
				return
			}
		}
	}()
	return done
}
