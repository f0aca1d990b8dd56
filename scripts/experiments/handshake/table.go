package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/knowngood/knowngood/scripts/internal/benchrun"
	"github.com/knowngood/knowngood/shared/protocol"
)

// cell is every run of one server, N and client.
type cell struct {
	server server
	client string
	n      int
	runs   []row
}

// cellsOf groups rows by server, N and client, in the order they ran.
func cellsOf(rows []row) []*cell {
	var cells []*cell
	for _, r := range rows {
		i := slices.IndexFunc(cells, func(c *cell) bool { return c.server.name == r.server.name && c.n == r.n && c.client == r.client })
		if i < 0 {
			cells = append(cells, &cell{server: r.server, client: r.client, n: r.n})
			i = len(cells) - 1
		}
		cells[i].runs = append(cells[i].runs, r)
	}
	return cells
}

// results are the runs that produced a client's figures.
func (c *cell) results() []row {
	return slices.DeleteFunc(slices.Clone(c.runs), func(r row) bool { return r.res == nil })
}

// success is the lowest and highest success %, over the runs.
func (c *cell) success() (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, r := range c.results() {
		v := 100 * float64(r.res.Connected) / float64(max(r.res.Attempts, 1))
		lo, hi, ok = min(lo, v), max(hi, v), true
	}
	return lo, hi, ok
}

// median of a client figure over the runs that connected any.
func (c *cell) median(pick func(*result) *float64) *float64 {
	var v []float64
	for _, r := range c.results() {
		if p := pick(r.res); p != nil {
			v = append(v, *p)
		}
	}
	if len(v) == 0 {
		return nil
	}
	m := benchrun.Median(v)
	return &m
}

func (c *cell) p50() *float64 { return c.median(func(r *result) *float64 { return r.P50ms }) }
func (c *cell) max() *float64 { return c.median(func(r *result) *float64 { return r.MaxMs }) }

// echoWorst is the echoers' longest wait over the runs.
func (c *cell) echoWorst() *float64 {
	var worst *float64
	for _, r := range c.runs {
		if w := r.echo.worstMs(); w != nil && (worst == nil || *w > *worst) {
			worst = w
		}
	}
	return worst
}

// reportFigures are the founding report's success %, at N = 50, 100,
// 200, 500, for the server and client it measured: python-socketio on
// uvicorn under its own client, and the zishang520 Go client v3.0.0 with
// its default transports against the empty handler.
var reportFigures = map[[2]string]map[int]float64{
	{handlerEmpty, clientReport}:    {50: 100, 100: 100, 200: 100, 500: 100},
	{handlerAsync, clientReport}:    {50: 100, 100: 100, 200: 100, 500: 100},
	{handlerBlocking, clientReport}: {50: 2, 100: 1, 200: 0, 500: 2},
	{handlerEmpty, clientGoV300}:    {50: 14, 100: 14, 200: 8, 500: 13},
}

// report is the report's figure for the cell, "" where it has none: the
// real python-socketio rows and the knowngood rows that stand in for
// them.
func (c *cell) report() string {
	if c.server.kind == node || (c.server.handler == handlerBlocking && c.server.model != protocol.BlockingAsyncio) {
		return ""
	}
	if v, ok := reportFigures[[2]string{c.server.handler, c.client}][c.n]; ok {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return ""
}

// predicted is the success % a knowngood blocking target's model predicts
// for a client whose deadline counts from the start ("" for the report's
// client, whose wait starts at the open, and for the other servers).
func (c *cell) predicted(o options) string {
	if c.server.kind != knowngood || c.client == clientReport {
		return ""
	}
	if c.server.handler != handlerBlocking {
		return "100"
	}
	return strconv.FormatFloat(100*protocol.BlockingSuccess(c.server.model, c.n, o.delay, o.deadline), 'f', 0, 64)
}

// Agreement: success within successPoints of the peer's range; on
// blocking, whose times are its behaviour, p50 and max within timeShare
// of the peer's too, where both connected at least timedShare of their
// attempts (fewer make no distribution). How fast an empty or async
// connect is is the machine's and the library's, which the benchmarks
// measure, not a behaviour the target copies.
const (
	successPoints = 5
	timeShare     = 0.15
	timedShare    = 0.10
)

// agrees compares a knowngood cell with its peer's; why says where not.
func agrees(c, peer *cell) (ok bool, why string) {
	lo, hi, got := c.success()
	plo, phi, pgot := peer.success()
	if !got || !pgot {
		return false, "no figures"
	}
	var off []string
	if lo > phi+successPoints || hi < plo-successPoints {
		off = append(off, fmt.Sprintf("success %s vs %s", span(lo, hi), span(plo, phi)))
	}
	if c.server.handler == handlerBlocking && lo >= 100*timedShare && plo >= 100*timedShare {
		for _, f := range []struct {
			name     string
			got, per *float64
		}{{"p50", c.p50(), peer.p50()}, {"max", c.max(), peer.max()}} {
			if f.got != nil && f.per != nil && math.Abs(*f.got-*f.per) > timeShare**f.per {
				off = append(off, fmt.Sprintf("%s %.0f vs %.0f ms", f.name, *f.got, *f.per))
			}
		}
	}
	return len(off) == 0, strings.Join(off, ", ")
}

func span(lo, hi float64) string {
	if lo == hi {
		return strconv.FormatFloat(lo, 'f', 1, 64)
	}
	return strconv.FormatFloat(lo, 'f', 1, 64) + "-" + strconv.FormatFloat(hi, 'f', 1, 64)
}

// find is the cell of server, client and N, if it ran.
func find(cells []*cell, s server, client string, n int) *cell {
	for _, c := range cells {
		if c.server.name == s.name && c.client == client && c.n == n {
			return c
		}
	}
	return nil
}

// agreement is the cell's column: for a knowngood row, each peer that ran
// and whether the row agrees with it.
func agreement(cells []*cell, c *cell) string {
	var out []string
	for _, p := range c.server.peers() {
		peer := find(cells, p, c.client, c.n)
		if peer == nil {
			continue
		}
		if ok, why := agrees(c, peer); ok {
			out = append(out, p.name+": yes")
		} else {
			out = append(out, p.name+": no ("+why+")")
		}
	}
	return strings.Join(out, "; ")
}

func writeTable(w io.Writer, o options, cells []*cell) {
	fmt.Fprintf(w, "\nN Socket.IO connects at once, a fresh server per run (knowngood on %s), connect cost %s (async: on its own timer; blocking: holding the one loop). Clients over WebSocket: report waits python-socketio's default %s from the Engine.IO open, the others %s from the start; go and go-v3.0.0 use the zishang520 client's default transports. %d run(s) each; success is the client's count (a range over the runs), p50 and max medians. Report: the founding report's figure. Echo max: the worst round trip of %d clients connected before the burst, echoing every 100 ms. Server ok and lost by: knowngood's own count. Agrees: success within %d points of the real peer's range, and on blocking p50 and max within %.0f %%.\n\n",
		o.engine, o.delay, reportWait, o.deadline, o.reps, o.echoers, successPoints, 100*timeShare)
	fmt.Fprintln(w, "| server | N | client | success % | report % | predicted % | p50 ms | max ms | echo max ms | server ok | lost by | agrees with the real server |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
	for _, c := range cells {
		lo, hi, ok := c.success()
		if !ok {
			fmt.Fprintf(w, "| %s | %d | %s | error: %v | %s | %s | | | | | | |\n", c.server.name, c.n, c.client, c.runs[0].err, c.report(), c.predicted(o))
			continue
		}
		serverOK, lost := "-", lostBy(c.runs[len(c.runs)-1])
		if st := c.runs[len(c.runs)-1].stats; st != nil {
			serverOK = strconv.FormatUint(st.Handshakes[protocol.ResultOK], 10)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			c.server.name, c.n, c.client, span(lo, hi), c.report(), c.predicted(o), benchrun.Num(c.p50(), 0), benchrun.Num(c.max(), 0),
			benchrun.Num(c.echoWorst(), 0), serverOK, lost, agreement(cells, c))
	}
	writeSummary(w, cells)
}

// writeSummary counts, per knowngood server, the rows that agree with
// each real peer.
func writeSummary(w io.Writer, cells []*cell) {
	type tally struct{ agree, all int }
	counts := map[[2]string]*tally{}
	var keys [][2]string
	for _, c := range cells {
		for _, p := range c.server.peers() {
			peer := find(cells, p, c.client, c.n)
			if peer == nil {
				continue
			}
			k := [2]string{c.server.name, p.name}
			if counts[k] == nil {
				counts[k] = &tally{}
				keys = append(keys, k)
			}
			counts[k].all++
			if ok, _ := agrees(c, peer); ok {
				counts[k].agree++
			}
		}
	}
	if len(keys) == 0 {
		return
	}
	fmt.Fprintln(w, "\n| knowngood | real server | rows that agree |")
	fmt.Fprintln(w, "|---|---|---:|")
	for _, k := range keys {
		fmt.Fprintf(w, "| %s | %s | %d of %d |\n", k[0], k[1], counts[k].agree, counts[k].all)
	}
}
