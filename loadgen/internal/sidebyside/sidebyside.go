// Package sidebyside writes the table of every loadgen report: one row per
// figure, the client's value and, when /stats or /proc gave one, the
// server's beside it.
package sidebyside

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/knowngood/knowngood/loadgen/internal/replicas"
	"github.com/knowngood/knowngood/loadgen/internal/tally"
	"github.com/knowngood/knowngood/loadgen/internal/verdict"
)

// Table is a report table whose server column comes from a *V, the
// scenario's view of the server; nil when there is none.
type Table[V any] struct {
	tw     *tabwriter.Writer
	server *V
	cap    *Capture // not nil: the rows go there, not to tw
	parts  []replicas.Replica
}

// New writes the header row: "client", and over the server column, when
// there is a server view, what header says of it.
func New[V any](w io.Writer, server *V, header func(*V) string) *Table[V] {
	t := &Table[V]{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0), server: server}
	serverHeader := ""
	if server != nil {
		serverHeader = header(server)
	}
	if c, ok := w.(*Capture); ok {
		t.cap = c
		c.Parts = append(c.Parts, Part{Columns: []string{"", "client", serverHeader}})
		return t
	}
	fmt.Fprintf(t.tw, "\tclient\t%s\n", serverHeader)
	return t
}

// Header names the server column: the variant and admin URL that /stats
// came from, or the process whose /proc figures were read.
func Header(variant, admin string, pid int) string {
	if n := strings.Count(admin, ",") + 1; variant != "" && n > 1 {
		return fmt.Sprintf("server (%s, sum of %d replicas)", variant, n)
	}
	if variant != "" {
		return fmt.Sprintf("server (%s, %s)", variant, admin)
	}
	return fmt.Sprintf("server (pid %d)", pid)
}

// Row writes one figure.
func (t *Table[V]) Row(name, client, server string) {
	if t.cap != nil {
		p := &t.cap.Parts[len(t.cap.Parts)-1]
		p.Rows = append(p.Rows, []string{name, client, server})
		return
	}
	fmt.Fprintf(t.tw, "%s\t%s\t%s\n", name, client, server)
}

// Server is f of the server view, or "" when there is none.
func (t *Table[V]) Server(f func(*V) string) string {
	if t.server == nil {
		return ""
	}
	return f(t.server)
}

// Replicas has Close write each replica's part under the table (nothing
// for fewer than two).
func (t *Table[V]) Replicas(parts []replicas.Replica) { t.parts = parts }

// Flush writes the aligned table out.
func (t *Table[V]) Flush() error {
	if t.cap != nil {
		return nil
	}
	return t.tw.Flush()
}

// Capture is a writer that keeps a report's table as rows and the text
// around it as text, in order: a WriteTable into a Capture gives what an
// HTML report shows, from the same code as the terminal's table.
type Capture struct {
	Parts []Part
}

// Part is either text or a table: its header and its rows, three cells
// each (figure, client, server).
type Part struct {
	Text    string
	Columns []string
	Rows    [][]string
}

// Write appends p to the text that follows the last table.
func (c *Capture) Write(p []byte) (int, error) {
	if n := len(c.Parts); n == 0 || c.Parts[n-1].Columns != nil {
		c.Parts = append(c.Parts, Part{})
	}
	c.Parts[len(c.Parts)-1].Text += string(p)
	return len(p), nil
}

// WriteJSON writes v, a report, as one JSON object and a newline.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Close flushes the table, then writes under it the errors by kind, why
// the server's view is missing (serverError, "" when it is not), and the
// verdicts.
func (t *Table[V]) Close(w io.Writer, errs map[string]tally.Count, serverError string, vs []verdict.Verdict) error {
	if err := t.Flush(); err != nil {
		return err
	}
	replicas.WriteTable(w, t.parts)
	tally.Write(w, "errors", errs)
	if serverError != "" {
		fmt.Fprintf(w, "server: %s\n", serverError)
	}
	verdict.Write(w, vs)
	return nil
}
