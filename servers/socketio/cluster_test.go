package socketio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/knowngood/knowngood/servers/socketio"
	"github.com/knowngood/knowngood/shared/clustertest"
	"github.com/knowngood/knowngood/shared/config"
	"github.com/knowngood/knowngood/shared/metrics"
	"github.com/knowngood/knowngood/shared/prereq"
)

// The cluster tests put two knowngood replicas and a Node socket.io server
// with @socket.io/redis-adapter on one real Redis, with the official
// socket.io-client on each (scripts/clients/sio-cluster.mjs).

// startNodeCluster runs scripts/node/sio-cluster-server.mjs on redisURL and
// returns its URL; the process is stopped when the test ends.
func startNodeCluster(t *testing.T, redisURL string) string {
	t.Helper()
	if _, err := os.Stat("../../scripts/node_modules/@socket.io/redis-adapter/package.json"); err != nil {
		prereq.Need(t, "@socket.io/redis-adapter (scripts/node_modules)", err)
	}
	cmd := exec.Command("node", "../../scripts/node/sio-cluster-server.mjs", "0", redisURL)
	cmd.Stderr = io.Discard
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		prereq.Need(t, "node", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case s := <-line:
		var ready struct{ Addr string }
		if err := json.Unmarshal([]byte(s), &ready); err != nil || ready.Addr == "" {
			t.Fatalf("sio-cluster-server printed %q", s)
		}
		return "http://" + ready.Addr
	case <-time.After(15 * time.Second):
		t.Fatal("sio-cluster-server not listening within 15s")
		return ""
	}
}

// driver is scripts/clients/sio-cluster.mjs: socket.io-client sockets on
// each server, one command per line.
type driver struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
}

// driverClient is one of the driver's sockets.
type driverClient struct {
	Server int
	ID     string
	Room   bool
}

func startDriver(t *testing.T, nsp string, per int, urls ...string) (*driver, []driverClient) {
	t.Helper()
	return startDriverRoom(t, nsp, "r", per, urls...)
}

// startDriverRoom is startDriver with the room the even sockets join.
func startDriverRoom(t *testing.T, nsp, room string, per int, urls ...string) (*driver, []driverClient) {
	t.Helper()
	args := []string{"../../scripts/clients/sio-cluster.mjs", "--per", fmt.Sprint(per), "--namespace", nsp, "--room", room}
	for _, u := range urls {
		args = append(args, "--url", u)
	}
	cmd := exec.Command("node", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, in: in, out: bufio.NewScanner(out)}
	d.out.Buffer(nil, 1<<20)
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	var ready struct {
		Msg     string
		Clients []driverClient
	}
	d.read(&ready, 30*time.Second)
	if ready.Msg != "ready" {
		t.Fatalf("sio-cluster: %+v; stderr: %s", ready, stderr.String())
	}
	return d, ready.Clients
}

// read reads one JSON line within d.
func (d *driver) read(v any, timeout time.Duration) {
	d.t.Helper()
	line := make(chan string, 1)
	go func() {
		if d.out.Scan() {
			line <- d.out.Text()
		}
		close(line)
	}()
	select {
	case s, ok := <-line:
		if !ok {
			d.t.Fatal("sio-cluster exited")
		}
		if err := json.Unmarshal([]byte(s), v); err != nil {
			d.t.Fatalf("sio-cluster printed %q: %v", s, err)
		}
	case <-time.After(timeout):
		d.t.Fatalf("sio-cluster: no answer within %v", timeout)
	}
}

// do sends a command and reads its answer.
func (d *driver) do(cmd map[string]any, v any) {
	d.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := d.in.Write(append(b, '\n')); err != nil {
		d.t.Fatal(err)
	}
	d.read(v, 20*time.Second)
}

// broadcast has socket 0 of server emit event with payload (and the room,
// for broadcast-room) and returns the ack's count.
func (d *driver) broadcast(server int, room, payload string) int {
	d.t.Helper()
	cmd := map[string]any{"cmd": "broadcast", "server": server, "payload": payload}
	if room != "" {
		cmd["cmd"], cmd["room"] = "broadcast-room", room
	}
	var r struct {
		Ack   *int
		Error string
	}
	d.do(cmd, &r)
	if r.Error != "" || r.Ack == nil {
		d.t.Fatalf("%v: no ack count, error %q", cmd, r.Error)
	}
	return *r.Ack
}

// wait waits until every socket (or every room member) has payload and
// returns how many have not.
func (d *driver) wait(payload string, room bool) int {
	d.t.Helper()
	var r struct{ Missing int }
	d.do(map[string]any{"cmd": "wait", "payload": payload, "room": room}, &r)
	return r.Missing
}

func (d *driver) report() map[string][]int {
	d.t.Helper()
	var r struct{ Received map[string][]int }
	d.do(map[string]any{"cmd": "report"}, &r)
	return r.Received
}

// cluster is the servers of one test: knowngood replicas (two, on the
// engines given) and a Node server.
type cluster struct {
	redis    *clustertest.Redis
	replicas []*target
	urls     []string // replicas then Node
	rdb      *redis.Client
}

// replicaEngines are the engine mixes the cluster tests run on: each
// engine alone, and one replica of each.
var replicaEngines = [][2]string{
	{config.EngineZishang520, config.EngineZishang520},
	{config.EngineNative, config.EngineNative},
	{config.EngineNative, config.EngineZishang520},
}

// forReplicaEngines runs test on each mix of replicaEngines, as a subtest
// named after it.
func forReplicaEngines(t *testing.T, test func(t *testing.T, engines [2]string)) {
	for _, e := range replicaEngines {
		t.Run(e[0]+"+"+e[1], func(t *testing.T) {
			t.Parallel() // each mix has a Redis and servers of its own
			test(t, e)
		})
	}
}

func startCluster(t *testing.T, engines [2]string) *cluster {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		prereq.Need(t, "node", err)
	}
	c := &cluster{redis: clustertest.StartRedis(t)}
	for _, engine := range engines {
		tg := start(t, engine, socketio.Empty, func(cfg *config.Config) { cfg.Cluster.Redis = c.redis.URL })
		c.replicas = append(c.replicas, tg)
		c.urls = append(c.urls, tg.url)
	}
	c.urls = append(c.urls, startNodeCluster(t, c.redis.URL))
	c.rdb = redis.NewClient(&redis.Options{Addr: c.redis.Addr()})
	t.Cleanup(func() { _ = c.rdb.Close() })
	c.waitSubscribed(t)
	return c
}

// waitSubscribed waits until the three servers listen on the request
// channel of namespace /: from then on, each receives what the others
// publish.
func (c *cluster) waitSubscribed(t *testing.T) {
	t.Helper()
	for _, ch := range []string{"socket.io-request#/#", "socket.io-request#/custom#"} {
		waitFor(t, "3 servers subscribed to "+ch, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			n, err := c.rdb.PubSubNumSub(ctx, ch).Result()
			return err == nil && n[ch] == 3
		})
	}
}

// TestClusterBroadcast: namespace-wide and room broadcasts sent on each
// server, knowngood or Node, reach every socket of the cluster (or every
// room member) exactly once, and every ack carries the cluster's count.
func TestClusterBroadcast(t *testing.T) {
	t.Parallel()
	forReplicaEngines(t, testClusterBroadcast)
}

func testClusterBroadcast(t *testing.T, engines [2]string) {
	c := startCluster(t, engines)
	const per = 4
	d, clients := startDriver(t, "/", per, c.urls...)
	total, members := len(clients), 0
	for _, cl := range clients {
		if cl.Room {
			members++
		}
	}
	for server := range c.urls {
		all, room := fmt.Sprintf("all-%d", server), fmt.Sprintf("room-%d", server)
		if n := d.broadcast(server, "", all); n != total {
			t.Errorf("server %d: broadcast ack %d, want the cluster's %d sockets", server, n, total)
		}
		if n := d.broadcast(server, "r", room); n != members {
			t.Errorf("server %d: broadcast-room ack %d, want the cluster's %d members", server, n, members)
		}
		if m := d.wait(all, false); m != 0 {
			t.Errorf("server %d: %d of %d sockets did not get the broadcast", server, m, total)
		}
		if m := d.wait(room, true); m != 0 {
			t.Errorf("server %d: %d of %d room members did not get the room broadcast", server, m, members)
		}
	}
	// Each socket is in the room of its id, as in Node: a broadcast there,
	// from any server, reaches that socket only, wherever it is.
	own := map[int]int{} // server -> the index of its first socket
	for i, cl := range clients {
		if _, ok := own[cl.Server]; !ok {
			own[cl.Server] = i
		}
	}
	for server := range c.urls {
		for _, i := range own {
			if n := d.broadcast(server, clients[i].ID, fmt.Sprintf("own-%d-%d", server, i)); n != 1 {
				t.Errorf("server %d: broadcast to the room of socket %d's id: ack %d, want 1", server, i, n)
			}
		}
	}
	// A last broadcast from each server, waited for, orders after every
	// copy of the ones above that each server forwarded: a duplicate would
	// be in the report by now.
	for server := range c.urls {
		d.broadcast(server, "", fmt.Sprintf("end-%d", server))
		d.wait(fmt.Sprintf("end-%d", server), false)
	}
	got := d.report()
	for server := range c.urls {
		for i, cl := range clients {
			if n := got[fmt.Sprintf("all-%d", server)][i]; n != 1 {
				t.Errorf("socket %d (server %d) got the broadcast of server %d %d times, want once", i, cl.Server, server, n)
			}
			want := 0
			if cl.Room {
				want = 1
			}
			if n := got[fmt.Sprintf("room-%d", server)][i]; n != want {
				t.Errorf("socket %d (server %d, member %v) got the room broadcast of server %d %d times, want %d", i, cl.Server, cl.Room, server, n, want)
			}
			for _, target := range own {
				want := 0
				if i == target {
					want = 1
				}
				if n := got[fmt.Sprintf("own-%d-%d", server, target)][i]; n != want {
					t.Errorf("socket %d got server %d's broadcast to socket %d's id %d times, want %d", i, server, target, n, want)
				}
			}
		}
	}
	// Namespaces are apart: /custom has its own channels and counts.
	custom, customClients := startDriver(t, "/custom", 1, c.urls...)
	for server := range c.urls {
		p := fmt.Sprintf("custom-%d", server)
		if n := custom.broadcast(server, "", p); n != len(customClients) {
			t.Errorf("server %d: /custom broadcast ack %d, want %d", server, n, len(customClients))
		}
		if m := custom.wait(p, false); m != 0 {
			t.Errorf("server %d: %d of %d /custom sockets did not get the broadcast", server, m, len(customClients))
		}
	}
	// A namespace a client makes on each replica (no -namespaces) is a
	// cluster namespace too, once both replicas have made it: a broadcast
	// there reaches the other replica's socket, and its ack counts both.
	a := dial(t, c.replicas[0].url, "/chat", []string{"websocket"}, nil)
	b := dial(t, c.replicas[1].url, "/chat", []string{"websocket"}, nil)
	const chat = "socket.io-request#/chat#"
	waitFor(t, "2 replicas subscribed to "+chat, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n, err := c.rdb.PubSubNumSub(ctx, chat).Result()
		return err == nil && n[chat] == 2
	})
	if got := b.emitAck(t, "broadcast", "chat"); fmt.Sprint(got) != "[2]" {
		t.Errorf("/chat broadcast ack %v, want the cluster's 2 sockets", got)
	}
	if got := a.nextEvent(t); fmt.Sprint(got) != "[broadcast chat]" {
		t.Errorf("the other replica's /chat socket got %v", got)
	}
	for p, counts := range d.report() {
		if strings.HasPrefix(p, "custom-") {
			t.Errorf("a socket of / got %s (%v)", p, counts)
		}
	}
	for i, r := range c.replicas {
		s := r.metrics.Snapshot()
		t.Logf("replica %d: cluster %v, redis errors %v", i, s.Cluster, s.RedisErrors)
		if s.Cluster["out"]["ok"] < 2 || s.Cluster["in"]["ok"] < 2 {
			t.Errorf("replica %d: cluster messages %v, want out/ok and in/ok >= 2", i, s.Cluster)
		}
		if got := r.srv.RedisState(); got != "up" {
			t.Errorf("replica %d: redis state %q", i, got)
		}
	}
}

// TestClusterRedisDown: with Redis killed, each replica still serves its
// own sockets, answers a broadcast's ack with its own count, and counts
// the broadcast that could not cross; once Redis is back, every server
// subscribes again by itself and broadcasts cross again.
func TestClusterRedisDown(t *testing.T) { forEngines(t, testClusterRedisDown) }

func testClusterRedisDown(t *testing.T, engine string) {
	c := startCluster(t, [2]string{engine, engine})
	const per = 2
	d, clients := startDriver(t, "/", per, c.urls...)
	if n := d.broadcast(0, "", "before"); n != len(clients) {
		t.Errorf("broadcast ack before %d, want %d", n, len(clients))
	}
	if m := d.wait("before", false); m != 0 {
		t.Fatalf("%d sockets did not get the broadcast sent before Redis went away", m)
	}

	c.redis.Stop()
	for i, r := range c.replicas {
		waitFor(t, fmt.Sprintf("replica %d sees Redis down", i), func() bool { return r.srv.RedisState() == "down" })
	}
	failedBefore := c.replicas[0].metrics.Snapshot().Cluster["out"]["failed"]
	if n := d.broadcast(0, "", "during"); n != per {
		t.Errorf("broadcast ack with Redis down %d, want this replica's %d sockets", n, per)
	}
	waitFor(t, "the broadcast that could not cross counted as out/failed", func() bool {
		return c.replicas[0].metrics.Snapshot().Cluster["out"]["failed"] > failedBefore
	})
	if n := c.replicas[0].metrics.Snapshot().RedisErrors[metrics.RedisPublish]; n == 0 {
		t.Error("redis_errors{op=publish} = 0 after a failed publish")
	}
	if n := c.replicas[0].metrics.Snapshot().RedisErrors[metrics.RedisCount]; n == 0 {
		t.Error("redis_errors{op=count} = 0 after a count without Redis")
	}

	c.redis.Start()
	for i, r := range c.replicas {
		waitFor(t, fmt.Sprintf("replica %d sees Redis up", i), func() bool { return r.srv.RedisState() == "up" })
	}
	c.waitSubscribed(t)
	for server := range c.replicas {
		after := fmt.Sprintf("after-%d", server)
		if n := d.broadcast(server, "", after); n != len(clients) {
			t.Errorf("server %d: broadcast ack after Redis came back %d, want %d", server, n, len(clients))
		}
		if m := d.wait(after, false); m != 0 {
			t.Errorf("server %d: %d sockets did not get the broadcast sent after Redis came back", server, m)
		}
	}
	got := d.report()
	for i, cl := range clients {
		want := 0
		if cl.Server == 0 {
			want = 1
		}
		if n := got["during"][i]; n != want {
			t.Errorf("socket %d (server %d) got the broadcast sent while Redis was down %d times, want %d", i, cl.Server, n, want)
		}
	}
}

// TestClusterShards: with -redis URL1,URL2 a replica of each engine
// publishes each room's broadcasts on the Redis its name hashes to, and
// listens on both: room broadcasts on either shard, and namespace-wide
// ones on the first, reach every socket they are for exactly once.
func TestClusterShards(t *testing.T) {
	t.Parallel()
	shards := []*clustertest.Redis{clustertest.StartRedis(t), clustertest.StartRedis(t)}
	urls := shards[0].URL + "," + shards[1].URL
	var servers []string
	for _, engine := range engines {
		tg := start(t, engine, socketio.Empty, func(cfg *config.Config) { cfg.Cluster.Redis = urls })
		servers = append(servers, tg.url)
	}
	// A room on each shard, by the hash every server computes.
	var rooms [2]string
	for i := 0; rooms[0] == "" || rooms[1] == ""; i++ {
		h := fnv.New32a()
		name := fmt.Sprintf("room-%d", i)
		_, _ = h.Write([]byte(name))
		if shard := h.Sum32() % 2; rooms[shard] == "" {
			rooms[shard] = name
		}
	}
	var published [2]<-chan *redis.Message
	for i, srv := range shards {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		ps := rdb.PSubscribe(context.Background(), "socket.io#/#*")
		if _, err := ps.Receive(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ps.Close(); _ = rdb.Close() })
		published[i] = ps.Channel()
		// Ours and those of each replica's two namespaces.
		waitFor(t, fmt.Sprintf("both replicas listening on shard %d", i), func() bool { return patternClients(rdb) == 1+2*2 })
	}
	const per = 2
	total := 0 // the namespace's sockets: each driver's stay till the end
	for shard, room := range rooms {
		d, clients := startDriverRoom(t, "/", room, per, servers...)
		total += len(clients)
		members := 0
		for _, cl := range clients {
			if cl.Room {
				members++
			}
		}
		for server := range servers {
			p := fmt.Sprintf("%s-%d", room, server)
			if n := d.broadcast(server, room, p); n != members {
				t.Errorf("%s from server %d: ack %d, want the cluster's %d members", room, server, n, members)
			}
			if m := d.wait(p, true); m != 0 {
				t.Errorf("%s from server %d: %d of %d members did not get it", room, server, m, members)
			}
			if msg := nextMessage(t, published[shard]); msg.Channel != "socket.io#/#"+room+"#" {
				t.Errorf("%s from server %d: shard %d carried %s", room, server, shard, msg.Channel)
			}
		}
		all := fmt.Sprintf("all-%s", room)
		if n := d.broadcast(shard, "", all); n != total {
			t.Errorf("namespace-wide broadcast from server %d: ack %d, want %d", shard, n, total)
		}
		if m := d.wait(all, false); m != 0 {
			t.Errorf("%d sockets did not get the namespace-wide broadcast", m)
		}
		if msg := nextMessage(t, published[0]); msg.Channel != "socket.io#/#" {
			t.Errorf("the namespace-wide broadcast went to %s", msg.Channel)
		}
		for p, counts := range d.report() {
			for i, n := range counts {
				if n > 1 {
					t.Errorf("socket %d got %s %d times", i, p, n)
				}
			}
		}
	}
}

// nextMessage is the next message a subscription received, within 10 s.
func nextMessage(t *testing.T, c <-chan *redis.Message) *redis.Message {
	t.Helper()
	select {
	case m := <-c:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("nothing published within 10s")
		return nil
	}
}

// patternClients is the number of a Redis server's clients subscribed to
// a pattern (CLIENT LIST's psub), -1 when it does not answer.
func patternClients(rdb *redis.Client) int {
	list, err := rdb.ClientList(context.Background()).Result()
	if err != nil {
		return -1
	}
	n := 0
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " psub=") && !strings.Contains(line, " psub=0 ") {
			n++
		}
	}
	return n
}
