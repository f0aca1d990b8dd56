package tally

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestErrors(t *testing.T) {
	var e Errors
	if m := e.Map(); m == nil || len(m) != 0 {
		t.Errorf("empty: %v", m)
	}
	e.Add("read", 1, errors.New("first"))
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { e.Add("read", 2, errors.New("later")) })
	}
	wg.Wait()
	e.Add("lost", 0, errors.New("nothing"))
	e.Add("dial", 3, errors.New("refused"))
	m := e.Map()
	if m["read"] != (Count{21, "first"}) || m["dial"] != (Count{3, "refused"}) || len(m) != 2 {
		t.Errorf("%v", m)
	}
	var b strings.Builder
	Write(&b, "errors", m)
	want := "errors:\n        21  read  first: first\n         3  dial  first: refused\n"
	if b.String() != want {
		t.Errorf("Write:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	Write(&b, "errors", nil)
	if b.Len() != 0 {
		t.Errorf("Write with none: %q", b.String())
	}
}

func TestMerge(t *testing.T) {
	got := Merge(map[string]Count{"read": {2, "a"}}, map[string]Count{"read": {3, "b"}, "dial": {1, "c"}}, nil)
	if len(got) != 2 || got["read"] != (Count{5, "a"}) || got["dial"] != (Count{1, "c"}) {
		t.Errorf("Merge = %v", got)
	}
}
