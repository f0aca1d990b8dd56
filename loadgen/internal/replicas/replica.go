package replicas

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/knowngood/knowngood/loadgen/internal/statsclient"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Replica is one replica's part of a run, for the reports (-json's
// "replicas") and the verdicts. Before and After are its raw /stats reads,
// so that per-shard reports can be merged over the whole window (the
// earliest Before, the latest After); Diff is what it counted in between.
// Error says why it has none of these.
type Replica struct {
	Admin  string          `json:"admin"`
	Error  string          `json:"error,omitempty"`
	Diff   *protocol.Stats `json:"diff,omitempty"`
	Before *protocol.Stats `json:"before,omitempty"`
	After  *protocol.Stats `json:"after,omitempty"`
}

// Parts is each replica's part between two reads of every replica.
func Parts(before, after []Read) []Replica {
	out := make([]Replica, 0, len(after))
	for i, a := range after {
		r := Replica{Admin: a.Admin}
		switch {
		case i >= len(before):
			r.Error = "not read before the run"
		case before[i].Err != nil:
			r.Error = "before the run: " + oneLine(before[i].Err.Error())
		case a.Err != nil:
			r.Error = "after the run: " + oneLine(a.Err.Error())
		default:
			b, af := before[i].Snapshot.Stats, a.Snapshot.Stats
			r.Before, r.After = &b, &af
			r.Diff = diff(b, af)
		}
		out = append(out, r)
	}
	return out
}

// diff is protocol.Diff without the raw histogram, which the percentiles
// already summarise in a report.
func diff(before, after protocol.Stats) *protocol.Stats {
	d := protocol.Diff(before, after)
	return &d
}

// Merge merges the parts of several runs over the same replicas (the
// shards of one run): for each replica, the earliest Before and the latest
// After (by the replica's own uptime, which only grows while it runs), so
// that the diff covers every shard's window.
func Merge(runs [][]Replica) ([]Replica, error) {
	var out []Replica
	index := map[string]int{}
	for _, parts := range runs {
		for _, p := range parts {
			i, ok := index[p.Admin]
			if !ok {
				index[p.Admin] = len(out)
				out = append(out, p)
				continue
			}
			m := &out[i]
			switch {
			case p.Error != "":
				if m.Error == "" {
					m.Error = p.Error
				}
			case m.Before == nil:
				if m.Error == "" {
					*m = p
				}
			default:
				if p.Before.UptimeSeconds < m.Before.UptimeSeconds {
					m.Before = p.Before
				}
				if p.After.UptimeSeconds > m.After.UptimeSeconds {
					m.After = p.After
				}
			}
		}
	}
	for i := range out {
		m := &out[i]
		if m.Error != "" {
			m.Before, m.After, m.Diff = nil, nil, nil
			continue
		}
		if m.Before == nil || m.After == nil {
			continue
		}
		// A process that restarted starts its uptime and counts again.
		if m.After.UptimeSeconds < m.Before.UptimeSeconds || m.After.ConnectionsTotal < m.Before.ConnectionsTotal ||
			m.After.MessagesReceived < m.Before.MessagesReceived || m.After.MessagesSent < m.Before.MessagesSent {
			return nil, fmt.Errorf("replica %s restarted between the shards' reads (uptime %.0fs after %.0fs)", m.Admin, m.After.UptimeSeconds, m.Before.UptimeSeconds)
		}
		m.Diff = diff(*m.Before, *m.After)
	}
	return out, nil
}

// Total is the sum of the parts that were read, nil when none was.
func Total(parts []Replica) *protocol.Stats {
	var sum *protocol.Stats
	for _, p := range parts {
		if p.Diff == nil {
			continue
		}
		if sum == nil {
			d := *p.Diff
			sum = &d
			continue
		}
		s := AddStats(*sum, *p.Diff)
		sum = &s
	}
	return sum
}

// Missing names the replicas without a part.
func Missing(parts []Replica) []string {
	var out []string
	for _, p := range parts {
		if p.Diff == nil {
			out = append(out, p.Admin)
		}
	}
	return out
}

// WriteTable writes one row per replica under a report's table: what each
// counted, and its own handshake percentiles (percentiles do not add up;
// the report's server column has those of all the handshakes together).
// Nothing for fewer than two replicas.
func WriteTable(w io.Writer, parts []Replica) {
	if len(parts) < 2 {
		return
	}
	fmt.Fprintf(w, "per replica (the server column is their sum; its handshake percentiles are those of every replica's handshakes together):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  replica\thandshakes ok\tmsgs received\tmsgs sent\tdropped\tfaults\tdisconnects\thandshake p50/p99\n")
	for _, p := range parts {
		if p.Diff == nil {
			fmt.Fprintf(tw, "  %s\tunreachable: %s\n", p.Admin, p.Error)
			continue
		}
		d := p.Diff
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%s\t%s\t%s / %s\n", p.Admin, d.Handshakes[protocol.ResultOK], d.MessagesReceived, d.MessagesSent,
			d.BroadcastDropped, line(d.Faults), line(d.Disconnects), ms(d.HandshakeLatency.P50, d.HandshakeLatency.Count), ms(d.HandshakeLatency.P99, d.HandshakeLatency.Count))
	}
	_ = tw.Flush()
}

func line(m map[string]uint64) string {
	if len(m) == 0 {
		return "-"
	}
	return tally.Line(m)
}

func ms(seconds float64, n uint64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatFloat(seconds*1000, 'f', 1, 64) + "ms"
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

// Ends sums the raw reads before and after of the parts that have both,
// as snapshots (the CPU time and resident memory as /stats gives them);
// ok is false when none has.
func Ends(parts []Replica) (before, after statsclient.Snapshot, ok bool) {
	var bs, as []Read
	for _, p := range parts {
		if p.Before == nil || p.After == nil {
			continue
		}
		bs = append(bs, Read{Admin: p.Admin, Snapshot: snapshotOf(*p.Before)})
		as = append(as, Read{Admin: p.Admin, Snapshot: snapshotOf(*p.After)})
	}
	if len(as) == 0 {
		return before, after, false
	}
	before, _ = Sum(bs)
	after, _ = Sum(as)
	return before, after, true
}

func snapshotOf(s protocol.Stats) statsclient.Snapshot {
	cpu, rss := s.CPUSeconds, float64(s.ResidentBytes)
	return statsclient.Snapshot{Stats: s, CPUSeconds: &cpu, ResidentBytes: &rss}
}
