package benchrun

import (
	"slices"
	"strings"
	"testing"
)

func TestCounts(t *testing.T) {
	if got, err := Counts("n", "50, 100,200"); err != nil || !slices.Equal(got, []int{50, 100, 200}) {
		t.Errorf("Counts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "10,x", "-1"} {
		if _, err := Counts("conns", bad); err == nil || !strings.Contains(err.Error(), "flag -conns") {
			t.Errorf("Counts(%q): error %v, want one that names -conns", bad, err)
		}
	}
}

func TestPick(t *testing.T) {
	valid := []string{"sync", "pipelined", "rate"}
	if got, err := Pick("modes", "pipelined, sync", valid); err != nil || !slices.Equal(got, []string{"pipelined", "sync"}) {
		t.Errorf("Pick = %v, %v", got, err)
	}
	if _, err := Pick("modes", "sync,fast", valid); err == nil || !strings.Contains(err.Error(), "flag -modes: want a list of sync, pipelined, rate") {
		t.Errorf("Pick with a bad word: %v", err)
	}
}
