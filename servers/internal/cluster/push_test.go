package cluster_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knowngood/knowngood/servers/internal/cluster"
	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/shared/clustertest"
	"github.com/knowngood/knowngood/shared/protocol"
)

// pushed is what one replica handed its clients: each push's seq and the
// replica that made it.
type pushed struct {
	mu     sync.Mutex
	seqs   []uint64
	makers []string
}

func (p *pushed) deliver(frame []byte) int {
	seq, _, ok := protocol.ParsePush(frame)
	_, maker, _ := strings.Cut(string(frame), `"payload":"`)
	p.mu.Lock()
	defer p.mu.Unlock()
	if ok {
		p.seqs = append(p.seqs, seq)
		p.makers = append(p.makers, strings.TrimSuffix(maker, `"}`))
	}
	return 1
}

func (p *pushed) view(f func(p *pushed)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// TestPushInOrderThroughStalls: three replicas push on one Redis, and
// each is held up now and then, longer than the lease, while it makes its
// push, so the lease changes hands while pushes are on their way. Every
// replica still hands its clients one stream of consecutive seqs.
func TestPushInOrderThroughStalls(t *testing.T) {
	t.Parallel() // a Redis of its own
	const interval, want = 10 * time.Millisecond, 100
	srv := clustertest.StartRedis(t)
	replicas := make([]*pushed, 3)
	ctx, stop := context.WithCancel(context.Background())
	var pushers sync.WaitGroup
	for i := range replicas {
		r, m := dial(t, srv)
		replicas[i] = new(pushed)
		bus := cluster.NewBus(r, m, replicas[i].deliver)
		stalls := rand.New(rand.NewPCG(uint64(i), 1))
		frame := func() (head, tail string) {
			// One push in four is made slowly: three intervals, past
			// the lease of two. The replicas stall at random, so that
			// the others are not held up at the same moment and take
			// the lease.
			if stalls.IntN(4) == 0 {
				time.Sleep(3 * interval)
			}
			return protocol.PushHead, string(protocol.AppendPushTail(nil, time.Now().UnixNano(), "r"+strconv.Itoa(i)))
		}
		pushers.Go(func() { bus.Push(ctx, interval, frame) })
		t.Cleanup(bus.Close)
	}
	t.Cleanup(func() { stop(); pushers.Wait() })

	lifecycletest.WaitUpTo(t, 30*time.Second, fmt.Sprintf("%d pushes at every replica", want), func() bool {
		for _, p := range replicas {
			n := 0
			p.view(func(p *pushed) { n = len(p.seqs) })
			if n < want {
				return false
			}
		}
		return true
	})
	for i, p := range replicas {
		p.view(func(p *pushed) {
			handovers := 0
			for j := 1; j < len(p.seqs); j++ {
				if p.seqs[j] != p.seqs[j-1]+1 {
					t.Fatalf("replica %d: push seq %d after %d", i, p.seqs[j], p.seqs[j-1])
				}
				if p.makers[j] != p.makers[j-1] {
					handovers++
				}
			}
			if handovers == 0 {
				t.Errorf("replica %d: all %d pushes made by %s; the stalls never moved the lease", i, len(p.seqs), p.makers[0])
			}
		})
	}
}
