// Package cluster tests scripts/cluster.sh and the nginx configurations of
// docker/nginx with real processes: redis-server, knowngood replicas and
// nginx on free loopback ports, driven by the official socket.io-client
// and gorilla/websocket clients. It has no code of its own.
package cluster
