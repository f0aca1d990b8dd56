package broadcast

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knowngood/knowngood/servers/internal/wsserver"
	"github.com/knowngood/knowngood/shared/metrics"
)

// Client is a connection as the hub sees it: a queue it may hand messages
// to and a way to close it. The hub knows nothing of the library behind.
type Client interface {
	// Enqueue never waits: nil, wsserver.ErrQueueFull or
	// wsserver.ErrClosing.
	Enqueue(o *wsserver.Outgoing) error
	Close(code int)
}

// Hub is the membership of one target and its fan-out. A fan-out reads an
// immutable list of members without a lock, so that a broadcast to 10,000
// clients never holds up a join, a leave, or a gnet event loop. A leave
// copies the list; a join appends to it in place when there is room,
// which no reader sees (each reads only up to its own length, and every
// list that shares the array is a prefix of the newest), so that n joins
// cost O(n), not O(n^2): copying on every join made 18,000 subscribers
// allocate 3 GB, which kept an idle subscriber at over 2 KiB of RSS and
// slowed their accepting.
type Hub struct {
	m         *metrics.Metrics
	closeSlow bool // -slow close; otherwise drop

	mu      sync.Mutex // serialises the copies
	members atomic.Pointer[[]Client]
}

func NewHub(slow string, m *metrics.Metrics) *Hub {
	// The fan-out series are this family's alone: a hub brings them.
	m.EnableBroadcast()
	h := &Hub{m: m, closeSlow: slow == "close"}
	h.members.Store(&[]Client{})
	return h
}

func (h *Hub) Join(c Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	next := append(*h.members.Load(), c)
	h.members.Store(&next)
}

func (h *Hub) Leave(c Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cur := *h.members.Load()
	i := slices.Index(cur, c)
	if i < 0 {
		return
	}
	next := slices.Delete(slices.Clone(cur), i, i+1)
	h.members.Store(&next)
}

// Send hands o to every member's queue and returns how many took it. A
// member whose queue is full gets the slow policy; one that is closing is
// left out.
func (h *Hub) Send(o *wsserver.Outgoing) int { return h.send(o, nil) }

// Broadcast sends o to every member but from, then o and from's result
// (made with the listenerCount, from counted) to from as one queue entry
// (wsserver.Pair): every member is charged one entry per broadcast, the
// sender too, so that with a small -send-queue the slow policy finds the
// client that does not read, not the one that sends.
func (h *Hub) Broadcast(o *wsserver.Outgoing, from Client, result func(listeners int) *wsserver.Outgoing) {
	n := h.send(o, from) + 1
	h.SendTo(from, wsserver.Pair(o, result(n)))
}

func (h *Hub) send(o *wsserver.Outgoing, skip Client) int {
	start := time.Now()
	sent, dropped := 0, 0
	for _, c := range *h.members.Load() {
		if c == skip {
			continue
		}
		switch err := c.Enqueue(o); {
		case err == nil:
			sent++
		case errors.Is(err, wsserver.ErrQueueFull):
			dropped++
			h.slow(c)
		}
	}
	h.m.Dropped(dropped)
	h.m.Fanout(time.Since(start))
	return sent
}

// SendTo hands o to one client, with the same slow policy as Send.
func (h *Hub) SendTo(c Client, o *wsserver.Outgoing) {
	if errors.Is(c.Enqueue(o), wsserver.ErrQueueFull) {
		h.m.Dropped(1)
		h.slow(c)
	}
}

// slow applies the policy to a client whose queue is full. The message is
// dropped and counted either way; with -slow close the client is closed
// with 1008 too, which is then its disconnect reason.
func (h *Hub) slow(c Client) {
	if h.closeSlow {
		c.Close(wsserver.ClosePolicyViolation)
	}
}
