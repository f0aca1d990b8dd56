package verdict

import (
	"fmt"

	"github.com/knowngood/knowngood/loadgen/internal/plural"
	"github.com/knowngood/knowngood/shared/protocol"
)

// ListenQueue: the kernel turned connects away at the listen queue, and
// their clients' SYN retries got them in later (not a loss: the wait is).
const ListenQueue = "listen-queue"

// whyNeverReached says where the connects that never reached the server
// went: to the listen queue when the kernel counted drops there over the
// run, elsewhere when it counted none; the usual suspects when the server
// does not say (a target that does not read the kernel's counts).
func whyNeverReached(s *protocol.Stats) string {
	q := s.ListenQueue
	switch {
	case q == nil:
		return " (check the listen backlog, open-files limits, ephemeral ports)"
	case q.Drops > 0 || q.Overflows > 0:
		return ": " + dropped(q) + "; a client whose SYN retries ran out or outlasted its deadline never got in"
	}
	return ": the kernel dropped none at listen queues, so not the backlog (check the client's open-files limit, ephemeral ports and deadline, and the path to the server)"
}

// dropped describes the kernel's listen-queue drops over the run.
func dropped(q *protocol.ListenQueue) string {
	backlog := ""
	if q.Limit > 0 {
		backlog = fmt.Sprintf(" (backlog %d)", q.Limit)
	}
	return fmt.Sprintf("the kernel dropped %s at the listen queue%s, %d of them accept-queue overflows (counted for the server's whole network namespace)",
		plural.Of(max(q.Drops, q.Overflows), "connect"), backlog, q.Overflows)
}

// listenQueue says, when every connect reached the server but the kernel
// dropped some at the listen queue on the way, what that cost: a dropped
// SYN or handshake is retried by the client's kernel after 1 s, then 2 s
// more, 4 s more..., so those connects took seconds without any error.
func listenQueue(s *protocol.Stats, reached, n uint64, add func(string, string, ...any)) {
	q := s.ListenQueue
	if q == nil || (q.Drops == 0 && q.Overflows == 0) || reached < n {
		return
	}
	add(ListenQueue, "%s; their clients' SYN retries got them in, each after 1 s, 3 s, 7 s...: the seconds-long connects of such a run come from the queue, not the server's handshake", dropped(q))
}
