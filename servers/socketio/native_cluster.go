package socketio

import (
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
	for _, name := range append([]string{"/"}, namespacesOf(n.cfg)...) {
		n.adapters.Store(name, sioredis.NewNative(clusterOptions(servers, n.m, n.log), n.eng.Namespace(name)))
	}
	return nil
}

// namespaceMade joins a namespace a client's CONNECT made to the cluster.
// Another session's socket may join it in the moment before this
// returns; a broadcast of that socket's in that moment reaches this
// replica's sockets only.
func (n *native) namespaceMade(nsp *sioengine.Namespace) {
	if n.redis != nil {
		n.adapters.Store(nsp.Name(), sioredis.NewNative(clusterOptions(n.redis, n.m, n.log), nsp))
	}
}

// adapter is a namespace's cluster adapter; nil without -redis.
func (n *native) adapter(name string) *sioredis.Native {
	if a, ok := n.adapters.Load(name); ok {
		return a.(*sioredis.Native)
	}
	return nil
}

// leaveCluster stops the adapters, waits for the counts they ended, and
// closes the Redis clients.
func (n *native) leaveCluster() {
	n.adapters.Range(func(_, a any) bool {
		a.(*sioredis.Native).Close()
		return true
	})
	n.counts.Wait()
	closeRedis(n.redis)
}
