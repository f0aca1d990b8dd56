package htmlreport

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knowngood/knowngood/loadgen/internal/htmltest"
	"github.com/knowngood/knowngood/loadgen/internal/sidebyside"
	"github.com/knowngood/knowngood/loadgen/timeline"
	"github.com/knowngood/knowngood/shared/protocol"
)

var timeRef = time.Now()

func f(v float64) *float64 { return &v }

func TestWriteHTMLSeveralRuns(t *testing.T) {
	var runs []Run
	for _, group := range []string{"empty, loadgen", "blocking, loadgen"} {
		for _, n := range []int{50, 100, 200} {
			ok := n
			if strings.HasPrefix(group, "blocking") {
				ok = n / 10
			}
			runs = append(runs, Run{Name: group + ", n=" + strconv.Itoa(n), Group: group, Concurrency: n, Attempts: n, Succeeded: ok})
		}
	}
	// One run with everything, made as loadgen makes it.
	tl := timeline.New(timeRef)
	tl.Record(timeRef, 3e6)
	h := protocol.NewHistogram()
	_ = h.RecordValue(3000)
	full := Run{Name: "full <run>", Concurrency: 10, Attempts: 10, Succeeded: 9, Unit: "handshakes",
		Counts:       []Count{{Name: "connected", Client: 9, Server: f(10)}, {Name: "failed", Client: 1}},
		Samples:      tl.Samples(2e9),
		Distribution: timeline.Distribution(h)}
	var err error
	full.Report, err = Sections(func(w io.Writer) error {
		io.WriteString(w, "handshake: 10 connections\n")
		tab := sidebyside.New(w, &struct{}{}, func(*struct{}) string { return "server (empty)" })
		tab.Row("connected", "9", "ok 10")
		if err := tab.Flush(); err != nil {
			return err
		}
		_, err := io.WriteString(w, "errors:\n  1 deadline\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	runs = append(runs, full)

	var b bytes.Buffer
	if err := WriteHTML(&b, "experiment <handshake>", runs); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("HTMLREPORT_OUT"); dir != "" { // to look at it
		_ = os.WriteFile(filepath.Join(dir, "several.html"), b.Bytes(), 0o644)
	}
	p := htmltest.Parse(t, bytes.NewReader(b.Bytes()))
	// The success chart, and the full run's four.
	if p.SVGs != 5 {
		t.Errorf("%d SVG charts, want 5", p.SVGs)
	}
	if p.Tables["success"] != 1 || p.Tables["sidebyside"] != 1 || p.Tables["samples"] != 1 {
		t.Errorf("tables %v", p.Tables)
	}
	for _, want := range []string{"experiment <handshake>", "full <run>", "blocking, loadgen", "10.0%", "90.0%", "handshake: 10 connections", "ok 10", "1 deadline", "server (empty)"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("no %q in the page", want)
		}
	}
}

// A run with nothing but its name: no chart, no table, no section of its
// own, and no error.
func TestWriteHTMLBare(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, "bare", []Run{{Name: "only a name"}}); err != nil {
		t.Fatal(err)
	}
	p := htmltest.Parse(t, &b)
	if p.SVGs != 0 || len(p.Tables) != 0 || strings.Contains(p.Text, "only a name") {
		t.Errorf("page %+v", p)
	}
}
