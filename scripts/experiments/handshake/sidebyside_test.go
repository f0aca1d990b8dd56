package main

import (
	"context"
	"strings"
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
// stretches but does not change: on asyncio the burst's acks leave
// together (the median connect ends with the last), on node one by one
// (the median ends near halfway); every connect completes; and an echo of
// a client already connected waits for the burst (it is sent during it:
// its wait is at least a quarter of the burst, 40 x 20 ms, on an idle
// machine about all of it). Each real server's shape is logged beside its
// model's and on an idle machine is the same (python-socketio together,
// Node one by one); it is not a condition, since beside a CPU hog the
// python client opens its connects late and python-socketio then answers
// them in waves.
func TestSideBySide(t *testing.T) {
	t.Chdir("../../..")
	const n, delay = 40, 20 * time.Millisecond
	o := options{deadline: 10 * time.Second, delay: delay, engine: config.EngineZishang520, echoers: 2}
	burst := time.Duration(n) * delay
	for _, pair := range [][2]string{{"blocking-asyncio", "python-blocking"}, {"blocking-node", "node-blocking"}} {
		var shapes [2]string
		for i, name := range pair {
			r := measure(context.Background(), tlog{t}, o, &benchrun.Binaries{}, serverNamed(name), clientPython, n)
			if r.err != nil || r.res == nil || r.res.P50ms == nil || r.res.MaxMs == nil {
				t.Fatalf("%s: %+v (%v)", name, r.res, r.err)
			}
			if r.res.Connected != n {
				t.Errorf("%s: %d of %d connected within %v", name, r.res.Connected, n, o.deadline)
			}
			// Together: the median is within a quarter of the burst of the
			// last; one by one, the median is near halfway.
			shapes[i] = "one by one"
			if gap := time.Duration((*r.res.MaxMs - *r.res.P50ms) * float64(time.Millisecond)); gap < burst/4 {
				shapes[i] = "together"
			}
			worst := r.echo.worstMs()
			t.Logf("%s: p50 %.0f ms, max %.0f ms (%s), echo worst %.0f ms", name, *r.res.P50ms, *r.res.MaxMs, shapes[i], *worst)
			if i == 0 && time.Duration(*worst*float64(time.Millisecond)) < burst/4 {
				t.Errorf("%s: an echo during the burst waited at most %.0f ms, want the frozen loop's, >= %v", name, *worst, burst/4)
			}
		}
		if shapes[0] != shapes[1] {
			t.Logf("%s completed its connects %s, %s %s (see the test's comment)", pair[0], shapes[0], pair[1], shapes[1])
		}
		want := map[string]string{"blocking-asyncio": "together", "blocking-node": "one by one"}[pair[0]]
		if !strings.EqualFold(shapes[0], want) {
			t.Errorf("%s completes its connects %s, want %s", pair[0], shapes[0], want)
		}
	}
}
