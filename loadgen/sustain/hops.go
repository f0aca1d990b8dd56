package sustain

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/knowngood/knowngood/shared/hops"
	"github.com/knowngood/knowngood/shared/protocol"
)

// With -hops, every emit and push carries an object that asks the target
// for hop stamps (shared/hops), and each ack and push that comes back is
// split by hop: the client's send time to the replica's handler, the
// handler to the answer handed over, the Redis hop (a push another replica
// delivered), and the rest until it was read here.

// stamps are a message's stamps, µs since the Unix epoch, 0 when absent.
type stamps struct {
	T    int64 `json:"t"`
	Hops struct {
		Rx  int64 `json:"rx"`
		Tx  int64 `json:"tx"`
		Dlv int64 `json:"dlv"`
	} `json:"hops"`
}

// askStamps is the argument that asks for the stamps, sent at t.
func askStamps(t time.Time) map[string]any {
	return map[string]any{hops.SendTime: t.UnixMicro(), hops.Field: map[string]any{}}
}

// stampsOf reads the stamps of a decoded argument (the zishang520
// client's) or of a raw one (the lean client's).
func stampsOf(arg any) (st stamps) {
	raw, ok := arg.(json.RawMessage)
	if !ok {
		raw, _ = json.Marshal(arg)
	}
	_ = json.Unmarshal(raw, &st)
	return st
}

// split is the message's hops, in µs, read at arrival; a hop whose stamps
// are missing or out of order is left out.
func (st stamps) split(arrival int64) map[string]int64 {
	out := map[string]int64{}
	add := func(hop string, from, to int64) {
		if from > 0 && to >= from {
			out[hop] = to - from
		}
	}
	h := st.Hops
	add(hops.ClientToReplica, st.T, h.Rx)
	add(hops.Replica, h.Rx, h.Tx)
	last := h.Tx
	if h.Dlv > 0 {
		add(hops.Redis, h.Tx, h.Dlv)
		last = h.Dlv
	}
	add(hops.ReplicaToClient, last, arrival)
	return out
}

// hopHists are one kind's (emits' or pushes') histograms by hop, for the
// current step.
type hopHists struct {
	mu sync.Mutex
	h  map[string]*hdrhistogram.Histogram
}

func (hh *hopHists) record(st stamps, arrival time.Time) {
	split := st.split(arrival.UnixMicro())
	if len(split) == 0 {
		return
	}
	hh.mu.Lock()
	defer hh.mu.Unlock()
	if hh.h == nil {
		hh.h = map[string]*hdrhistogram.Histogram{}
	}
	for hop, us := range split {
		h := hh.h[hop]
		if h == nil {
			h = protocol.NewHistogram()
			hh.h[hop] = h
		}
		_ = h.RecordValue(max(us, 1))
	}
}

// take returns the step's figures and starts the next step's.
func (hh *hopHists) take() map[string]protocol.Distribution {
	hh.mu.Lock()
	h := hh.h
	hh.h = nil
	hh.mu.Unlock()
	if len(h) == 0 {
		return nil
	}
	out := map[string]protocol.Distribution{}
	for hop, hist := range h {
		out[hop] = protocol.DistributionOf(protocol.Buckets(hist))
	}
	return out
}
