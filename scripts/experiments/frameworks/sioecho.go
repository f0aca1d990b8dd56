package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/knowngood/knowngood/loadgen/siolite"
	"github.com/knowngood/knowngood/scripts/internal/frameworks"
	"github.com/knowngood/knowngood/shared/procfs"
)

// echoWait bounds the wait for one echo: a server that stops answering
// ends the run instead of holding it.
const echoWait = 5 * time.Second

// sioEcho is the echo scenario over Socket.IO, as the report ran it: one
// client emits "message" with a size-byte string and the server emits it
// back (as "message-back", as Node's reference server and knowngood's
// targets do); sync waits for each echo, async keeps up to -inflight of them
// under way. The client is loadgen's lean one (loadgen/siolite), in this
// process, whose CPU over the window is the client's: nothing else here
// runs meanwhile.
func sioEcho(ctx context.Context, o options, url string, pid int, async bool) sample {
	payload := strings.Repeat("x", o.size)
	want, _ := json.Marshal(payload)
	echoes := make(chan bool, o.inflight+1) // true: the echo matched
	dctx, cancel := context.WithTimeout(ctx, echoWait)
	defer cancel()
	c, err := siolite.Dial(dctx, siolite.Options{URL: url, OnEvent: func(name string, args []json.RawMessage) {
		if name == frameworks.EchoReply {
			echoes <- len(args) == 1 && bytes.Equal(args[0], want)
		}
	}})
	if err != nil {
		return sample{err: fmt.Errorf("connect: %w", err)}
	}
	defer c.Close()

	inflight := 1
	if async {
		inflight = o.inflight
	}
	for range inflight {
		if err := c.Emit(frameworks.EchoEvent, payload); err != nil {
			return sample{err: err}
		}
	}
	start := time.Now()
	windowStart, end := start.Add(o.warmup), start.Add(o.warmup+o.duration)
	var r sample
	var counted int64
	var client0, server0 float64
	measuring := false
	timer := time.NewTimer(echoWait)
	defer timer.Stop()
	for {
		timer.Reset(echoWait)
		var ok bool
		select {
		case ok = <-echoes:
		case <-timer.C:
			return sample{err: fmt.Errorf("no echo in %s", echoWait)}
		case <-ctx.Done():
			return sample{err: ctx.Err()}
		}
		now := time.Now()
		if !measuring && !now.Before(windowStart) {
			measuring = true
			client0, _ = procfs.CPUSeconds(os.Getpid())
			server0, _ = procfs.CPUSeconds(pid)
			windowStart = now
		}
		if !now.Before(end) {
			break
		}
		if measuring {
			if ok {
				counted++
			} else {
				r.errors++
			}
		}
		if err := c.Emit(frameworks.EchoEvent, payload); err != nil {
			return sample{err: err}
		}
	}
	span := time.Since(windowStart).Seconds()
	client1, _ := procfs.CPUSeconds(os.Getpid())
	server1, _ := procfs.CPUSeconds(pid)
	r.rate, r.held, r.asked = float64(counted)/span, 1, 1
	r.clientCPU, r.serverCPU = perCore(client1-client0, span), perCore(server1-server0, span)
	return r
}
