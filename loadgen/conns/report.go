package conns

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/knowngood/knowngood/loadgen/htmlreport"
	"github.com/knowngood/knowngood/loadgen/internal/plural"
	"github.com/knowngood/knowngood/loadgen/internal/replicas"
	"github.com/knowngood/knowngood/loadgen/internal/scenario"
	"github.com/knowngood/knowngood/loadgen/internal/sidebyside"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/internal/target"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
)

// Report is the result of a run: the table and the JSON object carry the
// same figures.
type Report struct {
	scenario.Heading
	N       int      `json:"n"`
	Batch   int      `json:"batch"`
	Sources []string `json:"sources"` // empty: the kernel's choice
	Hold    string   `json:"hold"`
	// Namespace: the namespace each Socket.IO socket joined; "" for
	// WebSocket and TCP connections.
	Namespace string `json:"namespace,omitempty"`
	// Echo: the bytes each connection echoed once before it counted as
	// established (-echo); 0 for none.
	Echo int `json:"echo,omitempty"`
	// Get: each connection was one GET (-get), established when answered
	// with Status.
	Get    bool `json:"get,omitempty"`
	Status int  `json:"status,omitempty"`
	// OpenFiles says the open-files budget plainly; OpenFilesAllow is the
	// number of connections it leaves room for.
	OpenFiles      string `json:"open_files"`
	OpenFilesAllow int    `json:"open_files_allow"`

	Established int `json:"established"`
	Failed      int `json:"failed"`  // N - Established
	Dropped     int `json:"dropped"` // established, then ended by the target or the network while held
	Held        int `json:"held"`    // open at the end of the hold, when the target's memory is read
	// EstablishSeconds is the connect phase, from the first batch's start
	// to the last one's end; Batches has each batch's.
	EstablishSeconds float64 `json:"establish_seconds"`
	// ConnectsPerSecond is Established / EstablishSeconds: a burst's
	// throughput, the "requests/s" of a connect-and-request benchmark.
	ConnectsPerSecond float64 `json:"connects_per_second"`
	// Connect: each established connection's time from its dial to
	// established (the upgrade, the -echo or the -get response
	// included); nil when none was. ConnectHistogram is the same as
	// the HdrHistogram's non-empty buckets, which shards merge exactly.
	Connect          *ConnectTime      `json:"connect_ms"`
	ConnectHistogram []protocol.Bucket `json:"connect_histogram"`
	Batches          []Batch           `json:"batches"`
	// Samples: every second of the connect phase, from the first dial:
	// the connections established in it (count), the dials that failed in
	// it (errors), and how long the established ones took to dial and
	// upgrade.
	Samples []timeline.Sample `json:"samples"`
	// Errors: the failed connections by kind, and the dropped ones.
	Errors map[string]tally.Count `json:"errors"`
	// ClientCPUSeconds is this process's CPU time from the first dial to
	// the end of the hold.
	ClientCPUSeconds float64 `json:"client_cpu_seconds"`

	// Server is the target's view: its resident memory before the first
	// dial and at the end of the hold, from /stats or -pid.
	scenario.Judgment[ServerView]
}

// ConnectTime summarises the connections' times, in milliseconds.
type ConnectTime struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// setConnect fills in the connect times from h (µs) and the rate.
func (r *Report) setConnect(h *hdrhistogram.Histogram) {
	r.ConnectHistogram = protocol.Buckets(h)
	r.Connect = nil
	if h.TotalCount() > 0 {
		ms := func(us float64) float64 { return us / 1000 }
		r.Connect = &ConnectTime{Mean: ms(h.Mean()), P50: ms(float64(h.ValueAtPercentile(50))), P99: ms(float64(h.ValueAtPercentile(99))), Max: ms(float64(h.Max()))}
	}
	r.ConnectsPerSecond = 0
	if r.EstablishSeconds > 0 {
		r.ConnectsPerSecond = float64(r.Established) / r.EstablishSeconds
	}
}

// Batch is one batch of connections dialled at once.
type Batch = target.Batch

// ServerView is what the target reported.
type ServerView struct {
	Admin   string `json:"admin,omitempty"`
	Variant string `json:"variant,omitempty"`
	PID     int    `json:"pid,omitempty"`
	// Resident memory before and after, from /proc with -pid, else from
	// /stats; RSSSource says which.
	RSSBefore *float64 `json:"resident_bytes_before"`
	RSSAfter  *float64 `json:"resident_bytes_after"`
	RSSSource string   `json:"resident_source,omitempty"`
	// BytesPerConnection is (after - before) / held.
	BytesPerConnection *float64 `json:"bytes_per_connection"`
	// With -free-os-memory: the RSS once the target had collected its
	// garbage and returned free memory to the OS, and (that - before) /
	// held.
	RSSAfterFree                *float64 `json:"resident_bytes_after_free,omitempty"`
	BytesPerConnectionAfterFree *float64 `json:"bytes_per_connection_after_free,omitempty"`
	// From /stats: connections open at the end of the hold, and opened
	// over the run.
	ConnectionsActive *int64  `json:"connections_active"`
	ConnectionsOpened *uint64 `json:"connections_opened"`
	// HandshakesOK: the handshakes the server completed over the run (on
	// a Socket.IO target, the namespace CONNECTs it acknowledged).
	HandshakesOK *uint64 `json:"handshakes_ok"`
	// Replicas: each replica's part (-admin with several, or -shard);
	// the figures above are their sum.
	Replicas []replicas.Replica `json:"replicas,omitempty"`
}

func newReport(cfg Config, u target.URL, socketIO bool) *Report {
	r := &Report{Heading: scenario.Heading{URL: cfg.URL}, N: cfg.N, Batch: cfg.Batch, Hold: cfg.Hold.String(), Sources: []string{}, Errors: map[string]tally.Count{},
		Echo: cfg.Echo, Get: cfg.Get, ConnectHistogram: []protocol.Bucket{}}
	if cfg.Get {
		r.Status = cfg.Status
	}
	r.Client, r.Version = target.Client(u, target.Gorilla)
	if socketIO {
		r.Namespace = cfg.Namespace
		_, r.Version = target.Client(u, sioModule)
		r.Client = sioClientName
	}
	for _, a := range cfg.Sources {
		r.Sources = append(r.Sources, a.String())
	}
	return r
}

// The Socket.IO client, for reports.
const (
	sioClientName = "zishang520/socket.io-client-go"
	sioModule     = "github.com/zishang520/socket.io/clients/socket/v3"
)

// KiBPerConnection is the target's resident memory per held connection, in
// KiB; nil when unknown.
func (r *Report) KiBPerConnection() *float64 {
	if r.Server == nil || r.Server.BytesPerConnection == nil {
		return nil
	}
	v := *r.Server.BytesPerConnection / 1024
	return &v
}

// WriteCSV writes the samples, one row a second.
func (r *Report) WriteCSV(w io.Writer) error { return timeline.WriteCSV(w, r.Samples) }

// HTMLRun is the run for an HTML report: the connections established of
// -n as its success rate, and the client's counts against the server's.
func (r *Report) HTMLRun() (htmlreport.Run, error) {
	run := htmlreport.Run{
		Name:        fmt.Sprintf("%d idle connections to %s in batches of %d", r.N, r.URL, r.Batch),
		Concurrency: r.N, Attempts: r.N, Succeeded: r.Established,
		Samples: r.Samples, Unit: "connections established",
	}
	var opened, active *float64
	if s := r.Server; s != nil {
		opened, active = htmlreport.FloatOf(s.ConnectionsOpened), htmlreport.FloatOf(s.ConnectionsActive)
	}
	run.Counts = []htmlreport.Count{
		{Name: "established (server: opened)", Client: float64(r.Established), Server: opened},
		{Name: "held (server: active)", Client: float64(r.Held), Server: active},
	}
	return run.WithReport(r.WriteTable)
}

// WriteTable writes the report as a table: the client's figures, and the
// server's next to them when there are any.
func (r *Report) WriteTable(w io.Writer) error {
	sources := "the kernel's choice of source address"
	if len(r.Sources) > 0 {
		addrs := make([]netip.Addr, 0, len(r.Sources))
		for _, a := range r.Sources {
			if addr, err := netip.ParseAddr(a); err == nil {
				addrs = append(addrs, addr)
			}
		}
		sources = fmt.Sprintf("%s (%s)", plural.Of(len(r.Sources), "source address"), target.SourceList(addrs))
	}
	what := plural.Of(r.N, "idle connection")
	switch {
	case r.Namespace != "":
		what = plural.Of(r.N, "idle Socket.IO socket") + " (namespace " + r.Namespace + ")"
	case r.Get:
		what = plural.Of(r.N, "GET") + fmt.Sprintf(", one per TCP connection, HTTP %d counted,", r.Status)
	case r.Echo > 0:
		what = plural.Of(r.N, "connection") + fmt.Sprintf(" echoing %d bytes once,", r.Echo)
	}
	fmt.Fprintf(w, "conns: %s to %s in batches of %d from %s, held %s (%s %s)\n",
		what, r.URL, r.Batch, sources, r.Hold, r.Client, r.Version)
	if r.OpenFiles != "" {
		fmt.Fprintf(w, "%s\n", r.OpenFiles)
	}
	s := r.Server
	t := sidebyside.New(w, s, func(s *ServerView) string { return sidebyside.Header(s.Variant, s.Admin, s.PID) })
	t.Row("established", fmt.Sprintf("%d of %d", r.Established, r.N),
		t.Server(func(s *ServerView) string {
			if s.ConnectionsOpened == nil {
				return ""
			}
			return fmt.Sprintf("%d opened", *s.ConnectionsOpened)
		}))
	if r.Namespace != "" {
		t.Row("namespace CONNECT", "", t.Server(func(s *ServerView) string {
			if s.HandshakesOK == nil {
				return ""
			}
			return fmt.Sprintf("%d acknowledged", *s.HandshakesOK)
		}))
	}
	t.Row("failed", strconv.Itoa(r.Failed), "")
	t.Row("dropped while held", strconv.Itoa(r.Dropped), "")
	t.Row("held", strconv.Itoa(r.Held),
		t.Server(func(s *ServerView) string {
			if s.ConnectionsActive == nil {
				return ""
			}
			return fmt.Sprintf("%d active", *s.ConnectionsActive)
		}))
	rate := "-"
	if r.EstablishSeconds > 0 {
		rate = strconv.FormatFloat(float64(r.Established)/r.EstablishSeconds, 'f', 0, 64) + "/s"
	}
	t.Row("establish", fmt.Sprintf("%s (%s)", seconds(r.EstablishSeconds), rate), "")
	if c := r.Connect; c != nil {
		t.Row("connect ms", fmt.Sprintf("mean %.1f, p50 %.1f, p99 %.1f, max %.1f", c.Mean, c.P50, c.P99, c.Max), "")
	}
	t.Row("batches", batchSummary(r.Batches), "")
	t.Row("cpu seconds", strconv.FormatFloat(r.ClientCPUSeconds, 'f', 2, 64), "")
	if s != nil && s.RSSSource != "" {
		t.Row("resident MiB", "", fmt.Sprintf("%.1f -> %.1f (%s)", *s.RSSBefore/(1<<20), *s.RSSAfter/(1<<20), s.RSSSource))
	}
	if kib := r.KiBPerConnection(); kib != nil {
		t.Row("per connection", "", fmt.Sprintf("%.2f KiB", *kib))
	}
	if s != nil && s.RSSAfterFree != nil {
		t.Row("after freeing", "", fmt.Sprintf("%.1f MiB, %.2f KiB per connection", *s.RSSAfterFree/(1<<20), *s.BytesPerConnectionAfterFree/1024))
	}
	if s != nil {
		t.Replicas(s.Replicas)
	}
	return t.Close(w, r.Errors, r.ServerError, r.Verdicts)
}

// batchSummary gives the batches' times: all of them when few, else the
// median and the slowest.
func batchSummary(batches []Batch) string {
	if len(batches) == 0 {
		return "-"
	}
	times := make([]float64, len(batches))
	for i, b := range batches {
		times[i] = b.Seconds
	}
	if len(times) <= 8 {
		s := make([]string, len(times))
		for i, t := range times {
			s[i] = seconds(t)
		}
		return fmt.Sprintf("%d (%s)", len(times), strings.Join(s, ", "))
	}
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	return fmt.Sprintf("%d (median %s, slowest %s)", len(times), seconds(sorted[len(sorted)/2]), seconds(sorted[len(sorted)-1]))
}

func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}
