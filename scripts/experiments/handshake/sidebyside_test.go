package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/shared/config"
)

// TestSideBySide is the experiment in small: 40 connects at once, each
// holding the loop 20 ms, on each blocking model and on the real server
// it stands in for (python-socketio on uvicorn for asyncio, Node's
// socket.io for node), under the same client in the same run, with
// clients connected before the burst echoing through it.
//
// What it checks is the shape of each model, which a loaded machine
// stretches but does not change: on asyncio the burst's acks leave in
// waves, each when the loop has drained: one wave when the CONNECTs all
// arrive while it is frozen; a few, the first ones small, when a slow
// client sends them late, on python-socketio as on the model (beside a
// CPU hog: 1-3 waves on python-socketio, the largest 18-40 connects; 1-7
// on the model, the largest 20-40). So a wave of a quarter of them or
// more. On node one by one, an ack per handler: no wave of more than a
// tenth. Every connect completes, and an echo of a client already
// connected waits for the burst (it is sent during it: its wait is at
// least a quarter of the burst, 40 x 20 ms, on an idle machine about all
// of it). Each real server's waves are logged beside its model's.
func TestSideBySide(t *testing.T) {
	t.Chdir("../../..")
	const n, delay = 40, 20 * time.Millisecond
	o := options{deadline: 10 * time.Second, delay: delay, engine: config.EngineZishang520, echoers: 2}
	burst := time.Duration(n) * delay
	for _, c := range []struct {
		model, real string
		ok          func(largest int) bool
		want        string
	}{
		{"blocking-asyncio", "python-blocking", func(l int) bool { return l >= n/4 }, "together: a wave of 10 or more"},
		{"blocking-node", "node-blocking", func(l int) bool { return l <= n/10 }, "one by one: no wave of more than 4"},
	} {
		var largest [2]int
		for i, name := range []string{c.model, c.real} {
			r := measure(context.Background(), tlog{t}, o, &benchrun.Binaries{}, serverNamed(name), clientPython, n)
			if r.err != nil || r.res == nil || len(r.res.Latencies) == 0 {
				t.Fatalf("%s: %+v (%v)", name, r.res, r.err)
			}
			if r.res.Connected != n {
				t.Errorf("%s: %d of %d connected within %v", name, r.res.Connected, n, o.deadline)
			}
			ws := wavesOf(r.res.Latencies, delay/2)
			for _, w := range ws {
				largest[i] = max(largest[i], w.size)
			}
			worst := r.echo.worstMs()
			t.Logf("%s: %d waves %v, echo worst %.0f ms", name, len(ws), ws, *worst)
			if i == 0 && time.Duration(*worst*float64(time.Millisecond)) < burst/4 {
				t.Errorf("%s: an echo during the burst waited at most %.0f ms, want the frozen loop's, >= %v", name, *worst, burst/4)
			}
		}
		t.Logf("largest wave: %s %d, %s %d", c.model, largest[0], c.real, largest[1])
		if !c.ok(largest[0]) {
			t.Errorf("%s: its largest wave completed %d connects, want %s", c.model, largest[0], c.want)
		}
	}
}

// wave is connects that completed together: how many, from when.
type wave struct {
	size int
	atMs float64
}

func (w wave) String() string { return fmt.Sprintf("%d at %.0f ms", w.size, w.atMs) }

// wavesOf groups sorted latencies whose neighbours are closer than gap.
func wavesOf(sortedMs []float64, gap time.Duration) []wave {
	var waves []wave
	for i, ms := range sortedMs {
		if i == 0 || time.Duration((ms-sortedMs[i-1])*float64(time.Millisecond)) >= gap {
			waves = append(waves, wave{atMs: ms})
		}
		waves[len(waves)-1].size++
	}
	return waves
}

func TestWavesOf(t *testing.T) {
	for _, c := range []struct {
		ms   []float64
		want string
	}{
		{nil, "[]"},
		{[]float64{465, 465, 466, 928, 929}, "[3 at 465 ms 2 at 928 ms]"},
		{[]float64{20, 40, 60}, "[1 at 20 ms 1 at 40 ms 1 at 60 ms]"},
		{[]float64{100, 105, 109}, "[3 at 100 ms]"},
	} {
		if got := fmt.Sprint(wavesOf(c.ms, 10*time.Millisecond)); got != c.want {
			t.Errorf("wavesOf(%v) = %s, want %s", c.ms, got, c.want)
		}
	}
}
