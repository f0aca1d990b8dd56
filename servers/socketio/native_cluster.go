package socketio

import (
	"encoding/json"
	"strconv"

	"github.com/knowngood/knowngood/servers/internal/cluster/sioredis"
	"github.com/knowngood/knowngood/servers/sioengine"
)

// The native engine's side of -redis: one sioredis.Native adapter per
// namespace, on the Redis side the zishang520 target's adapters use, so
// that replicas of both engines and Node servers share one cluster.

// joinCluster dials -redis and starts the adapters of the namespaces.
func (n *native) joinCluster() error {
	servers, err := dialRedis(n.cfg, n.m, n.log)
	if err != nil {
		return err
	}
	n.redis = servers
	n.adapters = map[string]*sioredis.Native{}
	for _, name := range []string{"/", "/custom"} {
		n.adapters[name] = sioredis.NewNative(clusterOptions(servers, n.m, n.log), n.eng.Namespace(name))
	}
	return nil
}

// publish hands a broadcast this replica delivered to the other servers.
func (n *native) publish(s *sioengine.Socket, room string, args []json.RawMessage, attachments [][]byte) {
	if a := n.adapters[s.Namespace().Name()]; a != nil {
		a.Publish(room, "broadcast", args, attachments)
	}
}

// ackCount answers a broadcast's ack with its count: this replica's at
// once without -redis; with it, the cluster's once every server has
// answered or sioredis.CountTimeout has passed, on a goroutine of its
// own so that the session's other events go on meanwhile.
func (n *native) ackCount(s *sioengine.Socket, e *sioengine.Event, room string, local int) {
	a := n.adapters[s.Namespace().Name()]
	// Once closing, Shutdown may be waiting for the counts already.
	if a == nil || n.closed.Load() {
		n.ack(e, countArg(local), nil)
		return
	}
	var rooms []string
	if room != "" {
		rooms = []string{room}
	}
	n.counts.Go(func() { n.ack(e, countArg(a.Count(rooms).Sockets), nil) })
}

func countArg(count int) []json.RawMessage {
	return []json.RawMessage{strconv.AppendInt(nil, int64(count), 10)}
}

// leaveCluster stops the adapters, waits for the counts they ended, and
// closes the Redis clients.
func (n *native) leaveCluster() {
	for _, a := range n.adapters {
		a.Close()
	}
	n.counts.Wait()
	closeRedis(n.redis)
}
