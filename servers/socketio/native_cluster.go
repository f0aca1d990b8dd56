package socketio

import (
	"github.com/knowngood/knowngood/servers/internal/cluster/sioredis"
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

// leaveCluster stops the adapters, waits for the counts they ended, and
// closes the Redis clients.
func (n *native) leaveCluster() {
	for _, a := range n.adapters {
		a.Close()
	}
	n.counts.Wait()
	closeRedis(n.redis)
}
