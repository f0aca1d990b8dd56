package verdict

import (
	"fmt"
	"strings"
	"testing"

	"github.com/knowngood/knowngood/shared/protocol"
)

// collect gathers what a judging function adds.
func collect() (*[]string, func(string, string, ...any)) {
	var got []string
	return &got, func(kind, format string, args ...any) { got = append(got, kind+": "+fmt.Sprintf(format, args...)) }
}

func TestWhyNeverReached(t *testing.T) {
	for _, c := range []struct {
		q    *protocol.ListenQueue
		want string
	}{
		{nil, "(check the listen backlog"},
		{&protocol.ListenQueue{Limit: 512}, "the kernel dropped none at listen queues, so not the backlog"},
		{&protocol.ListenQueue{Overflows: 1184, Drops: 1184, Limit: 512}, "the kernel dropped 1184 connects at the listen queue (backlog 512), 1184 of them accept-queue overflows"},
		{&protocol.ListenQueue{Drops: 3, Limit: -1}, "the kernel dropped 3 connects at the listen queue, 0 of them"},
	} {
		if got := whyNeverReached(&protocol.Stats{ListenQueue: c.q}); !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q; want %q in it", c.q, got, c.want)
		}
	}
}

func TestListenQueueVerdict(t *testing.T) {
	drops := &protocol.ListenQueue{Overflows: 883, Drops: 883, Limit: 512}
	for _, c := range []struct {
		name       string
		q          *protocol.ListenQueue
		reached, n uint64
		want       bool
	}{
		{"all in after retries", drops, 100, 100, true},
		{"some never in: NeverReached says it", drops, 90, 100, false},
		{"no drops", &protocol.ListenQueue{Limit: 512}, 100, 100, false},
		{"not read", nil, 100, 100, false},
	} {
		got, add := collect()
		listenQueue(&protocol.Stats{ListenQueue: c.q}, c.reached, c.n, add)
		if said := len(*got) == 1 && strings.HasPrefix((*got)[0], ListenQueue+": the kernel dropped 883"); said != c.want {
			t.Errorf("%s: %q; want a listen-queue verdict: %v", c.name, *got, c.want)
		}
	}
}

// TestHTTPRequests: plain GETs against a WebSocket target, which counts
// each as a failed handshake: all answered agree; some never answered
// and unseen by the server are placed at the listen queue when the kernel
// dropped connects there; none is a handshake the server gave up on.
func TestHTTPRequests(t *testing.T) {
	drops := &protocol.ListenQueue{Overflows: 40, Drops: 40, Limit: 16}
	for _, c := range []struct {
		name      string
		failed    uint64
		answered  int
		q         *protocol.ListenQueue
		wantKinds []string
	}{
		{"all answered", 300, 300, &protocol.ListenQueue{Limit: 4096}, []string{Agree}},
		{"all answered after retries", 300, 300, drops, []string{ListenQueue, Agree}},
		{"some never reached", 250, 250, drops, []string{NeverReached}},
		{"seen, not answered", 300, 290, nil, []string{ClientLost}},
	} {
		s := &protocol.Stats{Handshakes: map[string]uint64{protocol.ResultFailed: c.failed}, ListenQueue: c.q}
		vs := Judge(Run{Attempts: 300, Connected: c.answered, Answered: c.answered, Unit: UnitHTTP, Sent: -1, Received: -1, ClientCPU: -1, Server: s})
		var kinds []string
		for _, v := range vs {
			kinds = append(kinds, v.Kind)
		}
		if fmt.Sprint(kinds) != fmt.Sprint(c.wantKinds) {
			t.Errorf("%s: %v; want %v", c.name, vs, c.wantKinds)
		}
		if c.q == drops && !strings.Contains(vs[0].Text, "the kernel dropped 40 connects at the listen queue (backlog 16)") {
			t.Errorf("%s: %q does not name the listen queue", c.name, vs[0].Text)
		}
	}
}
