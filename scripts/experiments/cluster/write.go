package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/knowngood/knowngood/loadgen/htmlreport"
	"github.com/knowngood/knowngood/loadgen/passfail"
	"github.com/knowngood/knowngood/loadgen/timeline"
)

// write prints the report and writes -json and -html.
func (rep *report) write(o options, stdout io.Writer) error {
	parts := rep.parts()
	for _, p := range parts {
		if err := writePart(stdout, p); err != nil {
			return err
		}
	}
	passfail.Write(stdout, rep.Thresholds)
	if o.jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if o.htmlOut != "" {
		return rep.writeHTML(o.htmlOut, parts)
	}
	return nil
}

// parts are the report as text and tables, the same for the terminal and
// the HTML page.
func (rep *report) parts() []htmlreport.Section {
	head := fmt.Sprintf("experiment-cluster: %d Socket.IO connections (WebSocket) on %d replicas of empty behind nginx (least_conn, %d workers), %d Redis; %d loadgen shards; %d steps of %s; each client emits echo every %s, room pushes %g/s; open-files limit %d",
		rep.Conns, rep.Replicas, rep.NginxWorkers, rep.RedisShards, rep.Shards, len(rep.Steps), rep.StepDuration, rep.EmitInterval, rep.PushRate, rep.OpenFilesLimit)
	if rep.SourcesPerShard > 0 {
		head += fmt.Sprintf("; loopback source addresses per shard: %d", rep.SourcesPerShard)
	}
	if rep.Fault != "" {
		head += "; fault " + rep.Fault
	}
	if rep.Engine != "" {
		head += "; engine " + rep.Engine
	}
	if rep.Client != "" {
		head += "; client " + rep.Client
		if rep.Client == "lean" && !rep.ClientLoop {
			head += " on goroutines"
		}
	}
	if rep.PingInterval != "" {
		head += "; ping interval " + rep.PingInterval
	}
	parts := []htmlreport.Section{{Text: head + "\n"}, rep.stepTable()}
	if t := rep.hopTable(); len(t.Rows) > 0 {
		parts = append(parts, htmlreport.Section{Text: "\nLatency by hop, p50/p99 ms (client -> replica through nginx, inside the replica, Redis between replicas, replica -> client through nginx):\n"}, t)
	}
	parts = append(parts, htmlreport.Section{Text: "\nThe load client beside the replicas, per connection held (CPU: % of a core per 1,000 connections; memory: resident KiB per connection, the process's whole RSS over its connections):\n"}, rep.costTable())
	if n := len(rep.Steps); n > 0 {
		parts = append(parts, htmlreport.Section{Text: fmt.Sprintf("\nEach replica at the last step (%d):\n", n)}, replicaTable(rep.Steps[n-1]))
	}
	parts = append(parts, htmlreport.Section{Text: "\nClient vs server over the whole run (the servers' /stats, summed; each replica's part beside):\n"}, rep.reconcileTable())
	text := "\n"
	for _, v := range rep.Verdicts {
		text += "verdict: " + v + "\n"
	}
	return append(parts, htmlreport.Section{Text: text + rep.Machine + "\n"})
}

func (rep *report) stepTable() htmlreport.Section {
	t := htmlreport.Section{Columns: []string{"step", "target", "held", "connecting", "server active", "connect %", "lost", "reconnected",
		"msgs/s", "msgs/s per replica", "emit p50 ms", "emit p99 ms", "emit max ms", "push p50 ms", "push p99 ms", "push max ms",
		"replica CPU % max", "replica RSS MiB max", "Redis CPU %", "nginx CPU %", "client CPU %", "machine CPU %", "memory %"}}
	for _, s := range rep.Steps {
		cpu, rss := 0.0, 0.0
		for _, r := range s.Replicas {
			cpu, rss = max(cpu, r.CPUPct), max(rss, r.RSSMiB)
		}
		t.Rows = append(t.Rows, []string{itoa(s.Step), itoa(s.Target), i64(s.Held), i64(s.Connecting), i64(s.ServerActive), f2(s.SuccessPct),
			i64(s.Lost), i64(s.Reconnected), f0(s.MsgsPerS), f0(s.MsgsPerSPer), ms(s.Emit.P50), ms(s.Emit.P99), ms(s.Emit.Max),
			ms(s.Push.P50), ms(s.Push.P99), ms(s.Push.Max), f0(cpu), f0(rss), joinF(s.RedisCPUPct), f0(s.NginxCPUPct),
			f0(s.ClientCPUPct), f0(s.MachinePct), f0(s.MemPct)})
	}
	return t
}

// hopTable is each step's emits and pushes split by hop; empty when the
// clients asked for no stamps (-hops=false) or the target gave none.
func (rep *report) hopTable() htmlreport.Section {
	t := htmlreport.Section{Columns: []string{"step", "target"}}
	for _, kind := range []string{"emit", "push"} {
		for _, hop := range hopOrder(kind) {
			t.Columns = append(t.Columns, kind+" "+hopNames[hop])
		}
	}
	t.Columns = append(t.Columns, "client sched p99 ms", "client loop lag p99 ms", "replica sched p99 ms")
	for _, s := range rep.Steps {
		if len(s.EmitHops)+len(s.PushHops) == 0 {
			continue
		}
		row := []string{itoa(s.Step), itoa(s.Target)}
		for _, kind := range []string{"emit", "push"} {
			split := s.hops(kind)
			for _, hop := range hopOrder(kind) {
				cell := "-"
				if l, ok := split[hop]; ok && l.Count > 0 {
					cell = ms(l.P50) + "/" + ms(l.P99)
				}
				row = append(row, cell)
			}
		}
		t.Rows = append(t.Rows, append(row, f1(s.ClientSchedP99ms), f1(s.ClientLoopLagP99ms), f1(s.ReplicaSchedP99ms)))
	}
	return t
}

// costTable sets what each step's connections cost the load client
// beside what they cost the replicas: a load client dearer than its
// target decides on one machine how far a run gets.
func (rep *report) costTable() htmlreport.Section {
	t := htmlreport.Section{Columns: []string{"step", "held", "client CPU", "replicas CPU", "client / replicas CPU",
		"client KiB", "replicas KiB", "client / replicas KiB"}}
	for _, s := range rep.Steps {
		c := s.cost()
		if c.held == 0 {
			continue
		}
		t.Rows = append(t.Rows, []string{itoa(s.Step), i64(c.held), f2(c.clientCPU), f2(c.replicasCPU), ratio(c.clientCPU, c.replicasCPU),
			f1(c.clientKiB), f1(c.replicasKiB), ratio(c.clientKiB, c.replicasKiB)})
	}
	return t
}

// stepCost is one step's cost per connection, to the clients and to the
// replicas: CPU in % of a core per 1,000 connections, KiB of RSS each.
type stepCost struct {
	held                                           int64
	clientCPU, replicasCPU, clientKiB, replicasKiB float64
}

func (s stepRow) cost() stepCost {
	var c stepCost
	var active int64
	var cpu, rss float64
	for _, r := range s.Replicas {
		active += r.Active
		cpu += r.CPUPct
		rss += r.RSSMiB
	}
	if s.Held <= 0 || active <= 0 {
		return c
	}
	c.held = s.Held
	c.clientCPU, c.clientKiB = 1000*s.ClientCPUPct/float64(s.Held), 1024*s.ClientRSSMiB/float64(s.Held)
	c.replicasCPU, c.replicasKiB = 1000*cpu/float64(active), 1024*rss/float64(active)
	return c
}

// ratio is a / b as "0.85x", "-" when b is zero.
func ratio(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "x"
}

func replicaTable(s stepRow) htmlreport.Section {
	t := htmlreport.Section{Columns: []string{"replica", "up", "active", "msgs/s", "CPU %", "RSS MiB", "KiB per connection",
		"open files", "limit", "EMFILE refusals", "leak timers", "handshakes ok"}}
	for _, r := range s.Replicas {
		up := "yes"
		if !r.Alive {
			up = "no"
		} else if r.NoStats {
			up = "no /stats"
		}
		t.Rows = append(t.Rows, []string{r.Name, up, i64(r.Active), f0(r.MsgsPerS), f0(r.CPUPct), f0(r.RSSMiB), f1(r.KiBPerConn),
			itoa(r.Fds), itoa(r.Limit), strconv.FormatUint(r.EMFILE, 10), strconv.FormatUint(r.LeakTimers, 10), strconv.FormatUint(r.HandshakeOK, 10)})
	}
	return t
}

func (rep *report) reconcileTable() htmlreport.Section {
	t := htmlreport.Section{Columns: []string{"figure", "client", "server"}}
	for i := range rep.Replicas {
		t.Columns = append(t.Columns, "replica"+itoa(i+1))
	}
	for _, r := range rep.Reconcile {
		row := []string{r.Name, i64(r.Client), "-"}
		if r.Connecting > 0 {
			row[1] += fmt.Sprintf(" (+ %d still connecting)", r.Connecting)
		}
		if r.Server >= 0 {
			row[2] = i64(r.Server)
		}
		if r.Unread > 0 {
			row[2] += fmt.Sprintf(" (+ up to %d completed after the reading)", r.Unread)
		}
		for i := range rep.Replicas {
			if i < len(r.Replicas) {
				row = append(row, strconv.FormatUint(r.Replicas[i], 10))
			} else {
				row = append(row, "")
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// writePart prints a text or an aligned table.
func writePart(w io.Writer, p htmlreport.Section) error {
	if p.Columns == nil {
		_, err := io.WriteString(w, p.Text)
		return err
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(p.Columns, "\t")+"\t")
	for _, r := range p.Rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	return tw.Flush()
}

// writeHTML is the page: each step in the success-rate chart, then the
// run with its tables, the clients' and servers' counts side by side,
// the connections held at each second and the emits' latency.
func (rep *report) writeHTML(path string, parts []htmlreport.Section) error {
	var runs []htmlreport.Run
	for _, s := range rep.Steps {
		runs = append(runs, htmlreport.Run{Name: fmt.Sprintf("step %d: %d connections", s.Step, s.Target), Group: "connect success per step",
			Concurrency: s.Target, Attempts: int(s.Attempts), Succeeded: int(s.Connected)})
	}
	whole := htmlreport.Run{Name: "the whole run", Report: parts, Unit: "connections held"}
	for i, n := range rep.heldPerSecond {
		whole.Samples = append(whole.Samples, timeline.Sample{Second: i, Count: n})
	}
	for _, r := range rep.Reconcile {
		if r.Server >= 0 {
			v := float64(r.Server)
			whole.Counts = append(whole.Counts, htmlreport.Count{Name: r.Name, Client: float64(r.Client), Server: &v})
		}
	}
	runs = append(runs, whole)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("experiment-cluster: %d Socket.IO connections on %d replicas", rep.Conns, rep.Replicas)
	if err := htmlreport.WriteHTML(f, title, runs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func itoa(n int) string     { return strconv.Itoa(n) }
func i64(n int64) string    { return strconv.FormatInt(n, 10) }
func f0(v float64) string   { return strconv.FormatFloat(v, 'f', 0, 64) }
func f1(v float64) string   { return strconv.FormatFloat(v, 'f', 1, 64) }
func f2(v float64) string   { return strconv.FormatFloat(v, 'f', 2, 64) }
func ms(sec float64) string { return strconv.FormatFloat(sec*1000, 'f', 1, 64) }

func joinF(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = f0(x)
	}
	return strings.Join(slices.Clip(s), "/")
}
