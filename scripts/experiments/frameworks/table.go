package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/knowngood/knowngood/scripts/internal/benchrun"
)

// saturated is the share of one core at which a process counts as
// saturated: the echo client is one goroutine or one event loop, and the
// report's Node and Python servers are one thread each.
const saturated = 90

// summary is the medians of one server's runs of one part.
type summary struct {
	ok, runs, failed int
	firstErr         error
	rate, kib        float64
	held, asked      int
	p50, p99         float64
	clientCPU        float64
	serverCPU        float64
	errors           int // over all runs
}

func summarize(rs []sample) summary {
	var s summary
	var rate, kib, held, p50, p99, ccpu, scpu []float64
	for _, r := range rs {
		s.runs++
		if r.err != nil {
			s.failed++
			if s.firstErr == nil {
				s.firstErr = r.err
			}
			continue
		}
		s.ok++
		rate, kib, held = append(rate, r.rate), append(kib, r.kib), append(held, float64(r.held))
		p50, p99 = append(p50, r.p50), append(p99, r.p99)
		ccpu, scpu = append(ccpu, r.clientCPU), append(scpu, r.serverCPU)
		s.asked = r.asked
		s.errors += r.errors
	}
	m := benchrun.Median
	s.rate, s.kib, s.held, s.p50, s.p99 = m(rate), m(kib), int(m(held)), m(p50), m(p99)
	s.clientCPU, s.serverCPU = m(ccpu), m(scpu)
	return s
}

// boundBy names the side that saturated first, if one did: the one past
// saturated that used more of the cores.
func (s summary) boundBy() string {
	switch {
	case s.clientCPU >= saturated && s.clientCPU >= s.serverCPU:
		return "client"
	case s.serverCPU >= saturated && s.serverCPU > s.clientCPU:
		return "server"
	}
	return ""
}

// cpu is the client's and the server's CPU, % of one core.
func (s summary) cpu() string { return fmt.Sprintf("%.0f / %.0f", s.clientCPU, s.serverCPU) }

// part is one column group of the tables: a figure of a scenario, with
// the report's, and which way is better.
type part struct {
	name   string
	value  func(summary) float64
	report func(reported) float64
	lower  bool // lower is better (latency, memory)
}

var (
	pSync  = part{partSync, func(s summary) float64 { return s.rate }, func(r reported) float64 { return r.sync }, false}
	pAsync = part{partAsync, func(s summary) float64 { return s.rate }, func(r reported) float64 { return r.async }, false}
	// Connections held: the report's count against the memory one costs
	// here (the fewer KiB, the more fit), so that ratios to gorilla
	// compare: gorilla's KiB over the row's.
	pConns = part{partConns, func(s summary) float64 { return s.kib }, func(r reported) float64 { return r.held }, true}
	pP50   = part{partLatency, func(s summary) float64 { return s.p50 }, func(r reported) float64 { return r.p50 }, true}
	pP99   = part{partLatency, func(s summary) float64 { return s.p99 }, func(r reported) float64 { return r.p99 }, true}
)

// tables holds the summaries by server and part name.
type tables struct {
	o    options
	sums map[string]map[string]summary
}

func writeTables(w io.Writer, o options, res results) {
	t := tables{o: o, sums: map[string]map[string]summary{}}
	for key, parts := range res {
		t.sums[key] = map[string]summary{}
		for p, rs := range parts {
			t.sums[key][p] = summarize(rs)
		}
	}
	fmt.Fprintf(w, "\nThe framework comparison rerun: %d-byte text messages, %s windows after %s of warmup, medians of %d runs; ratios are to gorilla's minimal server, here and in the report (its figures: two 16-core EPYC machines, 50 s windows). CPU is client / server, %% of one core; \"bound by\" names a side past %d%% of a core that used more than the other.\n",
		o.size, o.duration, o.warmup, o.reps, saturated)
	if slices.Contains(o.scenarios, scEcho) {
		t.echoTable(w)
	}
	if slices.Contains(o.scenarios, scConns) {
		t.connsTable(w)
	}
	if slices.Contains(o.scenarios, scLatency) {
		t.latencyTable(w)
	}
	t.orderings(w)
	t.beside(w)
}

// ratio is x against gorilla's figure of the same part, as a string; the
// report's when rep.
func (t tables) ratio(p part, key string) string {
	s, ok := t.sum(key, p.name)
	b, okB := t.sum(baseline, p.name)
	if !ok || !okB || p.value(b) == 0 || p.value(s) == 0 {
		return "-"
	}
	if p.name == partConns {
		return fmt.Sprintf("%.2f", p.value(b)/p.value(s))
	}
	return fmt.Sprintf("%.2f", p.value(s)/p.value(b))
}

func reportRatio(p part, key string) string {
	r, ok := theReport[key]
	b := theReport[baseline]
	if !ok || p.report(r) == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f", p.report(r)/p.report(b))
}

// sum is the summary of a part that had at least one good run.
func (t tables) sum(key, p string) (summary, bool) {
	s, ok := t.sums[key][p]
	return s, ok && s.ok > 0
}

// failed is a row's cell for a part that had no good run: a framework
// that cannot run here keeps its row, with the reason.
func (t tables) failed(s subject, p string) string {
	if err := s.available(); err != nil {
		return benchrun.Cell("cannot run here: " + err.Error())
	}
	x := t.sums[s.key][p]
	return benchrun.Cell(fmt.Sprintf("failed (%d of %d runs): %v", x.failed, x.runs, x.firstErr))
}

// measured is the rows of part p: every server measured, and those that
// cannot run here.
func (t tables) measured(p string) []subject {
	var out []subject
	for _, s := range t.o.subjects {
		if _, ok := t.sums[s.key][p]; ok || s.available() != nil {
			out = append(out, s)
		}
	}
	return out
}

func (t tables) echoTable(w io.Writer) {
	fmt.Fprintf(w, "\n### Echo throughput, one connection\n\nsync: send one, wait for its echo; async: up to %d awaiting their echo.\n\n", t.o.inflight)
	fmt.Fprintln(w, "| server | runs here | sync msg/s | x gorilla | in the report | CPU | async msg/s | x gorilla | in the report | CPU | bound by | errors |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
	for _, s := range t.measured(partSync) {
		cells := []string{s.row, benchrun.Cell(s.runs)}
		var bound []string
		errs := 0
		for _, p := range []part{pSync, pAsync} {
			x, ok := t.sum(s.key, p.name)
			if !ok {
				cells = append(cells, t.failed(s, p.name), "", reportRatio(p, s.key), "")
				continue
			}
			cells = append(cells, fmt.Sprintf("%.0f", x.rate), t.ratio(p, s.key), reportRatio(p, s.key), x.cpu())
			if b := x.boundBy(); b != "" {
				bound = append(bound, p.name+": "+b)
			}
			errs += x.errors
		}
		cells = append(cells, strings.Join(bound, ", "), fmt.Sprint(errs))
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

func (t tables) connsTable(w io.Writer) {
	fmt.Fprintf(w, "\n### Connections held\n\n%d connections over %d loadgen processes, %d at a time, held idle %s; the report's held counts against the memory one costs here (x gorilla: gorilla's KiB over the row's, so that more is better in both).\n\n",
		t.o.conns, t.o.shards, t.o.batch, t.o.hold)
	fmt.Fprintln(w, "| server | held | KiB per connection | x gorilla | held in the report | x gorilla in the report | CPU over the connects | failed or dropped |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range t.measured(partConns) {
		x, ok := t.sum(s.key, partConns)
		rep := ""
		if r, ok := theReport[s.key]; ok && r.held > 0 {
			rep = fmt.Sprintf("%.0fk", r.held/1000)
		}
		if !ok {
			fmt.Fprintf(w, "| %s | %s | | | %s | %s | | |\n", s.row, t.failed(s, partConns), rep, reportRatio(pConns, s.key))
			continue
		}
		fmt.Fprintf(w, "| %s | %d of %d | %.1f | %s | %s | %s | %s | %d |\n", s.row, x.held, x.asked, x.kib, t.ratio(pConns, s.key),
			rep, reportRatio(pConns, s.key), x.cpu(), x.errors)
	}
}

func (t tables) latencyTable(w io.Writer) {
	fmt.Fprintf(w, "\n### Round trips at %d connections\n\nEach connection sends one message every %s; a WebSocket message's round trip is timed from when it was due, a Socket.IO emit's to its ack (the connects included).\n\n",
		t.o.latencyConns, t.o.heartbeat)
	fmt.Fprintln(w, "| server | connected | p50 ms | x gorilla | in the report | p99 ms | x gorilla | in the report | CPU | bound by | errors |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
	for _, s := range t.measured(partLatency) {
		x, ok := t.sum(s.key, partLatency)
		if !ok {
			fmt.Fprintf(w, "| %s | %s | | | %s | | | %s | | | |\n", s.row, t.failed(s, partLatency), reportRatio(pP50, s.key), reportRatio(pP99, s.key))
			continue
		}
		fmt.Fprintf(w, "| %s | %d of %d | %.2f | %s | %s | %.2f | %s | %s | %s | %s | %d |\n", s.row, x.held, x.asked,
			x.p50, t.ratio(pP50, s.key), reportRatio(pP50, s.key), x.p99, t.ratio(pP99, s.key), reportRatio(pP99, s.key), x.cpu(), x.boundBy(), x.errors)
	}
}

// orderings compares, for each figure, the order of the report's
// frameworks here with the report's order: the pairs in the same order,
// and the ones that swapped.
func (t tables) orderings(w io.Writer) {
	fmt.Fprint(w, "\n### The report's ordering, here\n\n")
	fmt.Fprintln(w, "| figure | order here, best first | pairs as in the report | swapped |")
	fmt.Fprintln(w, "|---|---|---:|---|")
	for _, c := range []struct {
		label string
		p     part
	}{{"echo sync", pSync}, {"echo async", pAsync}, {"connections (KiB here, held there)", pConns}, {"p50", pP50}, {"p99", pP99}} {
		type entry struct {
			key, row    string
			here, there float64 // both: higher is better
		}
		var es []entry
		for _, s := range t.o.subjects {
			x, ok := t.sum(s.key, c.p.name)
			r, inReport := theReport[s.key]
			if !ok || !inReport || c.p.report(r) == 0 || c.p.value(x) == 0 {
				continue
			}
			e := entry{key: s.key, row: s.row, here: c.p.value(x), there: c.p.report(r)}
			if c.p.lower {
				e.here = -e.here
				if c.p.name != partConns { // the report's held count is higher-better already
					e.there = -e.there
				}
			}
			es = append(es, e)
		}
		if len(es) < 2 {
			continue
		}
		slices.SortStableFunc(es, func(a, b entry) int {
			switch {
			case a.here > b.here:
				return -1
			case a.here < b.here:
				return 1
			}
			return 0
		})
		var order, swapped []string
		same, pairs := 0, 0
		for i, a := range es {
			order = append(order, a.row)
			for _, b := range es[i+1:] {
				if a.there == b.there {
					continue
				}
				pairs++
				if a.there > b.there {
					same++
				} else {
					swapped = append(swapped, a.row+" above "+b.row)
				}
			}
		}
		fmt.Fprintf(w, "| %s | %s | %d of %d | %s |\n", c.label, strings.Join(order, " > "), same, pairs, strings.Join(swapped, "; "))
	}
}

// beside sets each of knowngood's targets beside the report's server it
// stands in for: the ratio of its figures to that server's, measured in
// the same run with the same client.
func (t tables) beside(w io.Writer) {
	var lines []string
	for _, s := range t.o.subjects {
		if s.beside == "" {
			continue
		}
		peer := s.beside
		cell := func(p part) string {
			a, okA := t.sum(s.key, p.name)
			b, okB := t.sum(peer, p.name)
			if !okA || !okB || p.value(a) == 0 || p.value(b) == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", p.value(a)/p.value(b))
		}
		lines = append(lines, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |", s.row, peer, cell(pSync), cell(pAsync), cell(pConns), cell(pP50), cell(pP99)))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprint(w, "\n### knowngood beside the server it stands in for\n\n")
	fmt.Fprint(w, "Each figure of the target over the same figure of the server (msg/s: more is faster; KiB and ms: less is leaner).\n\n")
	fmt.Fprintln(w, "| target | beside | sync msg/s | async msg/s | KiB per connection | p50 | p99 |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
