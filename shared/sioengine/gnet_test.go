package sioengine

import (
	"bytes"
	"testing"

	"github.com/gobwas/ws"

	"github.com/knowngood/knowngood/shared/wsserver"
	"github.com/knowngood/knowngood/shared/wsserver/wsframe"
)

// handOverPeer records what a session hands to its loop; the rest of
// LoopPeer is not used by writeFrames.
type handOverPeer struct {
	wsserver.LoopPeer
	handed [][]byte
}

func (p *handOverPeer) WriteFrames(b []byte) error {
	p.handed = append(p.handed, b)
	return nil
}

// TestLoopWritesShareTheBroadcastFrame: on gnet a broadcast's frame is
// framed once, and every session hands the very same bytes to its loop;
// a session's own frames around it are framed into one buffer each side
// of it, and the order on the wire is the order they were queued in.
func TestLoopWritesShareTheBroadcastFrame(t *testing.T) {
	shared := encodeEvent("/", "news", -1, nil, nil, true)[0]
	own := func(s string) *frame { return &frame{data: []byte(s)} }
	a, b := &handOverPeer{}, &handOverPeer{}
	if err := (&loopWS{p: a}).writeFrames([]*frame{own("40"), own("3"), shared, own("42[1]")}); err != nil {
		t.Fatal(err)
	}
	if err := (&loopWS{p: b}).writeFrames([]*frame{shared}); err != nil {
		t.Fatal(err)
	}
	if len(a.handed) != 3 || len(b.handed) != 1 {
		t.Fatalf("hand-overs: %d and %d, want 3 and 1", len(a.handed), len(b.handed))
	}
	if &a.handed[1][0] != &b.handed[0][0] {
		t.Error("the broadcast's frame was copied for a session, not shared")
	}
	var want []byte
	for _, s := range []string{"40", "3", `42["news"]`, "42[1]"} {
		want = wsframe.AppendFrame(want, 0, ws.OpText, []byte(s))
	}
	if got := bytes.Join(a.handed, nil); !bytes.Equal(got, want) {
		t.Errorf("on the wire %q, want %q", got, want)
	}
}
