package socketio

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// pusher is the timed push of the Socket.IO targets (-push-interval): every
// interval, an event (-push-event) to every socket of the namespace "/",
// or with -push-rooms N to each of the rooms push-1 ... push-N that sockets
// join with the join event, each push numbered per room, so that a client
// that sees a gap in seq has lost one, and stamped with its send time, so
// that it can tell the push's latency, as the broadcast targets' push does.
// A replica pushes to its own sockets (-redis carries no push), so that
// each socket sees one replica's numbering. A tick missed because a push
// ran long is skipped, not made up.
type pusher struct {
	interval time.Duration
	rooms    []string // "" alone: every socket
	filler   string
	send     func(room string, seq uint64, filler string)

	stop chan struct{}
	once sync.Once
	done sync.WaitGroup
}

// PushRoom is the name of the i-th push room (from 1) with -push-rooms.
func PushRoom(i int) string { return "push-" + strconv.Itoa(i) }

func newPusher(interval time.Duration, size, rooms int, send func(room string, seq uint64, filler string)) *pusher {
	p := &pusher{interval: interval, filler: strings.Repeat("x", size), send: send, stop: make(chan struct{})}
	p.rooms = []string{""}
	if rooms > 0 {
		p.rooms = make([]string, rooms)
		for i := range p.rooms {
			p.rooms[i] = PushRoom(i + 1)
		}
	}
	return p
}

// start begins pushing; a nil pusher (no -push-interval) does nothing.
func (p *pusher) start() {
	if p == nil {
		return
	}
	p.done.Go(func() {
		ticker := time.NewTicker(p.interval)
		defer ticker.Stop()
		for seq := uint64(1); ; seq++ {
			select {
			case <-p.stop:
				return
			case <-ticker.C:
			}
			for _, room := range p.rooms {
				p.send(room, seq, p.filler)
			}
		}
	})
}

// halt stops the push and waits for the one under way.
func (p *pusher) halt() {
	if p == nil {
		return
	}
	p.once.Do(func() { close(p.stop) })
	p.done.Wait()
}
