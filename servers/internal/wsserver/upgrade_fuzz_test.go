package wsserver_test

import (
	"bufio"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/knowngood/knowngood/servers/internal/lifecycle/lifecycletest"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/wstest"
)

// FuzzGnetUpgradeSplits: gnet buffers an upgrade request that arrives
// in pieces, wherever they are cut; with garbage=true the same bytes with
// one flipped go in instead, and the answer is any HTTP status or a close,
// never a crash. Either way the target still upgrades a clean request
// afterwards. The fuzzer picks the cut points.
func FuzzGnetUpgradeSplits(f *testing.F) {
	f.Add([]byte{1, 2, 3}, false, uint16(0))
	f.Add([]byte{200, 1, 1, 1, 50}, false, uint16(0))
	f.Add([]byte{0}, true, uint16(3))
	f.Add([]byte{17, 4}, true, uint16(40))
	// One target for every input, shut down when the fuzz test ends.
	tg := lifecycletest.Start(f, "gnet", lifecycletest.Build(gnetEcho), lifecycletest.Options{Tweak: func(c *config.Config) { c.HandshakeTimeout = 2 * time.Second }})
	clean := []byte(wstest.UpgradeRequest())
	f.Fuzz(func(t *testing.T, cuts []byte, garbage bool, flip uint16) {
		if len(cuts) > 64 {
			cuts = cuts[:64]
		}
		req := append([]byte(nil), clean...)
		if garbage {
			req[int(flip)%len(req)] ^= 0x20
		}
		resp, err := sendInPieces(t, tg.Addr, req, cuts)
		switch {
		case !garbage && (err != nil || resp.StatusCode != http.StatusSwitchingProtocols):
			t.Fatalf("clean request cut at %v: %v, %v", cuts, resp, err)
		case garbage && err == nil && resp.StatusCode != http.StatusSwitchingProtocols && resp.StatusCode < 400:
			t.Fatalf("flipped byte %d: status %d", int(flip)%len(req), resp.StatusCode)
		}
		if garbage {
			if resp, err := sendInPieces(t, tg.Addr, clean, nil); err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("after garbage, a clean request: %v, %v", resp, err)
			}
		}
	})
}

func sendInPieces(t *testing.T, addr string, req []byte, cuts []byte) (*http.Response, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	rest := req
	for i := 0; len(rest) > 0; i++ {
		n := len(rest)
		if i < len(cuts) {
			n = min(n, int(cuts[i])+1)
		}
		if _, err := c.Write(rest[:n]); err != nil {
			return nil, err
		}
		rest = rest[n:]
		if i < 8 {
			time.Sleep(time.Millisecond) // some pieces arrive on their own
		}
	}
	return http.ReadResponse(bufio.NewReader(c), nil)
}
