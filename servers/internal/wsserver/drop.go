package wsserver

import (
	"context"
	"time"

	"github.com/knowngood/knowngood/servers/internal/control"
	"github.com/knowngood/knowngood/shared/faults"
)

// Faults is the injector of the known-bad modes (control.Faulter): the
// admin listener's POST /control/fault switches them.
func (t *httpTarget) Faults() *faults.Injector { return t.faults }

// Faults is httpTarget.Faults on the gnet loops.
func (g *gnetTarget) Faults() *faults.Injector { return g.faults }

// Drop closes a random fraction of the upgraded connections open now with
// how.Code, each as Peer.Close does: the admin listener's POST
// /control/drop.
func (t *httpTarget) Drop(fraction float64, how control.How) (int, int) {
	open := t.conns.Snapshot()
	picked := control.Pick(len(open), fraction)
	for _, i := range picked {
		open[i].Close(how.Code)
	}
	return len(picked), len(open)
}

// dropWait bounds how long a drop waits for the gnet loops to list their
// connections; a loop that does not answer in time keeps its own.
const dropWait = 5 * time.Second

// Drop is httpTarget.Drop on the gnet loops.
func (g *gnetTarget) Drop(fraction float64, how control.How) (int, int) {
	ctx, cancel := context.WithTimeout(context.Background(), dropWait)
	defer cancel()
	open := g.snapshot(ctx)
	picked := control.Pick(len(open), fraction)
	for _, i := range picked {
		open[i].Close(how.Code)
	}
	return len(picked), len(open)
}
