package faults

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParse: each mode from its flag's form, off, or 0; a bad form or a
// value out of range is refused saying what is wanted.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		name, value string
		want        Modes
	}{
		{NameReject, "0.5", Modes{Reject: 0.5}},
		{NameDelay, "200ms", Modes{Delay: 200 * time.Millisecond}},
		{NameCloseAfter, "10", Modes{CloseAfter: 10}},
		{NameDrop, "1", Modes{Drop: 1}},
		{NameLeakTimers, "1s", Modes{LeakTimers: time.Second}},
		{NameDropChunkedPost, "true", Modes{DropChunkedPost: true}},
	} {
		var m Modes
		if err := m.Parse(c.name, c.value); err != nil || m != c.want {
			t.Errorf("%s=%s: %+v, %v; want %+v", c.name, c.value, m, err, c.want)
		}
		if name, why := m.Check(); name != "" {
			t.Errorf("%s=%s: refused by Check: %s", c.name, c.value, why)
		}
		for _, off := range []string{Off, "0"} {
			if err := m.Parse(c.name, off); err != nil || m != (Modes{}) {
				t.Errorf("%s=%s: %+v, %v; want off", c.name, off, m, err)
			}
		}
	}
	for _, c := range []struct{ name, value, says string }{
		{NameReject, "half", "want a fraction"},
		{NameDelay, "soon", "want a duration"},
		{NameCloseAfter, "1.5", "want a whole number"},
		{NameDrop, "", "want a fraction"},
		{NameLeakTimers, "10", "want a duration"},
		{NameDropChunkedPost, "yes", "want true or false"},
		{"slow", "1", "no known-bad mode"},
	} {
		var m Modes
		if err := m.Parse(c.name, c.value); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s=%q: %v; want an error saying %q", c.name, c.value, err, c.says)
		}
	}
	for _, c := range []struct {
		name, value, says string
	}{
		{NameReject, "1.5", "want a fraction from 0 to 1"},
		{NameReject, "NaN", "want a fraction from 0 to 1"},
		{NameDrop, "-0.1", "want a fraction from 0 to 1"},
		{NameDrop, "+Inf", "want a fraction from 0 to 1"},
		{NameDelay, "-1s", "want 0 (off) or a positive duration"},
		{NameCloseAfter, "-1", "want 0 (off) to 4294967295"},
		{NameCloseAfter, "4294967296", "want 0 (off) to 4294967295"},
		{NameLeakTimers, "5ms", "at least 10ms"},
	} {
		var m Modes
		if err := m.Parse(c.name, c.value); err != nil {
			t.Errorf("%s=%s: %v; want parsed, refused by Check", c.name, c.value, err)
			continue
		}
		if name, why := m.Check(); name != c.name || !strings.Contains(why, c.says) {
			t.Errorf("%s=%s: Check says %s: %s; want %s: %s", c.name, c.value, name, why, c.name, c.says)
		}
	}
}

// TestValues: every mode's value in its flag's form, read back by Parse
// to the same modes.
func TestValues(t *testing.T) {
	m := Modes{Reject: 0.25, Delay: 1500 * time.Millisecond, CloseAfter: 7, Drop: 1, LeakTimers: time.Minute, DropChunkedPost: true}
	values := m.Values()
	if !slices.Equal(slices.Sorted(maps.Keys(values)), slices.Sorted(slices.Values(Names()))) {
		t.Fatalf("Values names %v, want %v", values, Names())
	}
	var back Modes
	for name, v := range values {
		if err := back.Parse(name, v); err != nil {
			t.Fatalf("%s=%s: %v", name, v, err)
		}
	}
	if back != m {
		t.Errorf("read back %+v, want %+v", back, m)
	}
	if got := (Modes{}).Values(); got[NameDelay] != "0s" || got[NameReject] != "0" || got[NameDropChunkedPost] != "false" {
		t.Errorf("every mode off: %v", got)
	}
	if got := m.Active(); !slices.Equal(got, Names()) {
		t.Errorf("Active %v, want every one", got)
	}
	if got := (Modes{Drop: 0.1, LeakTimers: time.Second}).Active(); !slices.Equal(got, []string{NameDrop, NameLeakTimers}) {
		t.Errorf("Active %v", got)
	}
}
