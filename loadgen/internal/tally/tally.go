// Package tally counts a run's errors by kind and keeps the text of the
// first one of each kind, which is usually the one that explains the rest.
package tally

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
)

// Count is one kind of error: how many, and the first one's text.
type Count struct {
	Count int    `json:"count"`
	First string `json:"first"`
}

// Errors is safe for concurrent use; the zero value is empty and ready.
type Errors struct {
	mu    sync.Mutex
	kinds map[string]*Count
}

// Add counts n errors of kind; the first of a kind keeps its text.
func (e *Errors) Add(kind string, n int, err error) {
	if n <= 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.kinds == nil {
		e.kinds = map[string]*Count{}
	}
	c := e.kinds[kind]
	if c == nil {
		c = &Count{First: err.Error()}
		e.kinds[kind] = c
	}
	c.Count += n
}

// Map returns the counts, for a report; never nil.
func (e *Errors) Map() map[string]Count {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]Count, len(e.kinds))
	for k, c := range e.kinds {
		out[k] = *c
	}
	return out
}

// Write lists counts under title, the largest first, one line each:
// count, kind, and the first error's text. It writes nothing for none.
func Write(w io.Writer, title string, counts map[string]Count) {
	if len(counts) == 0 {
		return
	}
	kinds := make([]string, 0, len(counts))
	width := 0
	for k := range counts {
		kinds = append(kinds, k)
		width = max(width, len(k))
	}
	slices.SortFunc(kinds, func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b].Count, counts[a].Count), cmp.Compare(a, b))
	})
	fmt.Fprintf(w, "%s:\n", title)
	for _, k := range kinds {
		fmt.Fprintf(w, "  %8d  %-*s  first: %s\n", counts[k].Count, width, k, counts[k].First)
	}
}

// Line writes counts by kind on one line, the kinds in order: "drop 3,
// reject 20".
func Line(m map[string]uint64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// Merge adds up the counts of several runs by kind; the first text is the
// first run's that has the kind.
func Merge(runs ...map[string]Count) map[string]Count {
	out := map[string]Count{}
	for _, m := range runs {
		for k, c := range m {
			o, ok := out[k]
			if !ok {
				o.First = c.First
			}
			o.Count += c.Count
			out[k] = o
		}
	}
	return out
}

// GnetLog is a gnet logger (gnet.WithLogger) for loadgen's gnet clients:
// it keeps gnet's own log out of the report, counting its errors with the
// run's ("gnet client") and dropping the rest.
type GnetLog struct{ Errs *Errors }

func (GnetLog) Debugf(string, ...any) {}
func (GnetLog) Infof(string, ...any)  {}
func (GnetLog) Warnf(string, ...any)  {}
func (l GnetLog) Errorf(format string, args ...any) {
	l.Errs.Add("gnet client", 1, fmt.Errorf(format, args...))
}
func (l GnetLog) Fatalf(format string, args ...any) { l.Errorf(format, args...) }

// Total is the count of every kind in m.
func Total(m map[string]Count) int {
	n := 0
	for _, c := range m {
		n += c.Count
	}
	return n
}
