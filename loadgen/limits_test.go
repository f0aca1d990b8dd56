package main

import (
	"encoding/json"
	"os/exec"
	"testing"
)

// TestBroadcastAtOpenFilesLimit: loadgen broadcast holds as many
// subscribers as its open-files check allows. Each subscriber's socket is
// duplicated when it moves to the gnet loops; done for a whole batch at
// once, that would need a batch of descriptors more than the check counted.
func TestBroadcastAtOpenFilesLimit(t *testing.T) {
	t.Parallel()
	prlimit, bin := underPrlimit(t)
	tg := startTarget(t, "broadcast-gnet", "-push-interval", "20ms")
	// 200 descriptors: room for about 150 connections after loadgen's own
	// and its margin; all 150 dialled in one batch.
	out, err := exec.Command(prlimit, "--nofile=200:200", bin, "broadcast", "-url", "ws://"+tg.addr+"/", "-admin", tg.admin,
		"-subscribers", "150", "-push", "-duration", "300ms", "-json", "-").Output()
	if err != nil {
		t.Fatalf("loadgen under prlimit: %v\n%s", err, out)
	}
	var r struct {
		Connected int
		Lost      uint64
		Errors    map[string]any
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if r.Connected != 150 || r.Lost != 0 || len(r.Errors) != 0 {
		t.Errorf("connected %d of 150, lost %d, errors %v", r.Connected, r.Lost, r.Errors)
	}
}
