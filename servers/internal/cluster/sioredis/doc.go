// Package sioredis is a Socket.IO adapter that speaks the Redis wire
// format of Node's @socket.io/redis-adapter 8.3.0 (with its default
// options: key "socket.io", msgpack by notepack.io), so that knowngood
// replicas and Node socket.io servers can share one Redis and serve one
// cluster. It has two faces over one Redis side (link.go: subscriptions,
// publisher, shards, requests, counts) and one encoder and decoder
// (wire.go): Adapter for github.com/zishang520/socket.io v3 (-engine
// zishang520), and Native for the project's own engine, servers/sioengine
// (-engine native). Replicas of both engines and Node servers mix in one
// cluster.
//
// # The native engine
//
// A native socket's event arguments are JSON as the client wrote them,
// with placeholders for the attachments. Native.Publish decodes them once
// into values (the attachments into buffers) to encode the message as
// Node does; a broadcast from another server is encoded back to JSON (as
// JSON.stringify writes it, object keys sorted) and attachments once, and
// its frames are queued on every socket it is for
// (sioengine's Namespace.BroadcastTo). Each socket is in the room of its
// id there too, as in Node, so that a Node server's io.to(id) reaches it.
// What differs from the zishang520 Adapter: a REMOTE_FETCH answer's
// handshake holds the auth only, and the volatile and compress flags of a
// broadcast from another server are not read.
//
// # Broadcasts across replicas
//
// Each namespace's adapter keeps the library's in-memory adapter for its
// own sockets and rooms, and adds Redis pub/sub:
//
//   - A broadcast (io.Emit, To(room).Emit...) is delivered to this
//     replica's sockets at once and published, unless it is local, as
//     msgpack [uid, packet, opts] with packet {type, data, nsp} and opts
//     {rooms, except, flags}: on socket.io#NSP#ROOM# when it goes to
//     exactly one room, on socket.io#NSP# otherwise. The encoding is
//     byte for byte Node's (integral numbers as integers, buffers as bin;
//     wire_test.go holds bytes a Node server published).
//   - Every server PSUBSCRIBEs socket.io#NSP#* and delivers what others
//     published to its own sockets, dropping its own messages by uid (six
//     random letters or digits, as the Node adapter's uid2(6), new for each
//     namespace at each start) and, unread, the messages of a room it has
//     no socket in.
//   - Messages are published in order by one goroutine per namespace,
//     pipelined, from a queue of 4096: a broadcast that finds the queue
//     full, or whose PUBLISH fails, reached this replica's sockets only.
//
// Broadcasts with acks from clients (BroadcastWithAck), server-side emits
// and connection state recovery stay local.
//
// # Rooms spread over several Redis servers
//
// One Redis carries every broadcast to every server: a PUBLISH costs it a
// write per subscribed server, and room pushes at a high rate make that
// Redis the cluster's bottleneck. With Options.Shards (knowngood -redis
// URL1,URL2,...), a broadcast to exactly one room is published on the
// shard its room's name hashes to (FNV-1a, modulo the number of shards;
// every server computes the same), and every server PSUBSCRIBEs
// socket.io#NSP#* on every shard, so that each Redis carries its share of
// the rooms. Broadcasts to several rooms or to the whole namespace, and
// the requests and responses of counts, stay on the first URL.
//
// How that meets Node's @socket.io/redis-adapter: on each shard the
// channels and the encoding are those above, unchanged. With one URL
// everything is shared both ways. With several, a Node server on the
// first URL only (the classic adapter takes one pub/sub pair) gets this
// cluster's broadcasts to the rooms that hash to the first shard, the
// namespace-wide ones and the requests, but not those of the rooms on the
// other shards; what it publishes, on the first URL, reaches every
// knowngood server, which listens on every shard. Node's own sharded
// adapter (createShardedAdapter) is a different design: Redis Cluster
// with SPUBLISH/SSUBSCRIBE, hashed by Redis on the channel name, and its
// own message format: it cannot share a cluster with these shards.
//
// # Counting sockets across the cluster
//
// Count is what Node's fetchSockets() does, minus the socket details: PUBSUB
// NUMSUB on socket.io-request#NSP# says how many servers listen (this
// one included), a SOCKETS request {uid, requestId, type: 0, rooms} on
// that channel asks the others, and their answers {requestId, sockets}
// on socket.io-response#NSP# (or the specific channel
// socket.io-response#NSP#UID#) are added to this replica's count. Count
// waits at most CountTimeout (1 s; Node's requestsTimeout default of 5 s is
// long for an ack a load client times), then reports what it has: the
// servers that did not answer are left out, CountResult says how many
// answered out of how many, and knowngood_redis_errors_total{op="count"}
// counts the incomplete count.
//
// The adapter answers other servers' SOCKETS, ALL_ROOMS and REMOTE_FETCH
// requests (Node's fetchSockets(), so a Node server counting gets this
// replica's sockets too, with their handshake, rooms and data), and acts
// on REMOTE_JOIN, REMOTE_LEAVE and REMOTE_DISCONNECT (socketsJoin,
// socketsLeave, disconnectSockets). Answers go to the shared response
// channel, as Node's do by default.
//
// # When Redis is down
//
// A replica keeps serving its own sockets: local delivery never waits on
// Redis. Each broadcast that could not be published is counted as
// knowngood_cluster_messages_total{direction="out",result="failed"} and
// knowngood_redis_errors_total{op="publish"}; a count is this replica's
// own (op="count"); a failed request or answer is op="request". Nothing
// is kept for later: what did not cross while Redis was away is lost (a
// Node server's redis client, unlike this one, queues its commands while
// offline and publishes them late). go-redis reconnects by itself and
// subscribes again to every channel and pattern, so delivery resumes
// without anything else; until then the replica is alone.
//
// A broadcast not published within a second is given up (out/failed),
// and each one sent carries that deadline (the options' flag
// knowngoodExpires, unix ms, which a Node server passes over): a stalled
// Redis that runs it later, from its socket buffer, has every knowngood
// server drop it, counted {direction="in",result="expired"}, so that no
// socket gets a broadcast its sender counted as not crossed.
package sioredis
