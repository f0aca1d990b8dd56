#!/usr/bin/env bash
# cluster.sh: a knowngood cluster on this machine, without Docker: Debian's
# redis-server, REPLICAS replicas of one variant joined through it (-redis),
# and nginx in front of them on 127.0.0.1:PORT.
#
#   scripts/cluster.sh up       # start it (make cluster VARIANT=broadcast-gnet REPLICAS=3)
#   scripts/cluster.sh status   # every process, each replica's /health, nginx
#   scripts/cluster.sh down     # stop everything that up started (make cluster-down)
#   scripts/cluster.sh front    # nginx alone, in front of replicas started elsewhere
#                               # (UPSTREAMS), on one or more PORTS; down stops it
#   scripts/cluster.sh conf     # print the nginx.conf front would write, start nothing
#                               # (docker/k8s/cluster/nginx.conf is made so)
#
# Settings (environment):
#   VARIANT       a variant of `knowngood -list` (empty)
#   REPLICAS      how many replicas (3)
#   PORT          nginx's port on 127.0.0.1, the cluster's address (8080)
#   LB            nginx's balancing, docker/nginx/upstream-LB.conf:
#                   least_conn   WebSocket-only clients (default for echo-* and broadcast-*)
#                   ip_hash      sticky by client address (default for Socket.IO);
#                                on one machine every client goes to ONE replica
#                   query_hash   sticky by client address and the query parameter
#                                `sticky`, which spreads one machine's clients
#                                (socket.io-client: query: {sticky: "<id>"})
#                   round_robin  KNOWN-BAD for Socket.IO with polling: "Session ID unknown"
#   REPLICA_PORT  the first replica's target port, the next ones follow; 0 = any
#                 free port (8201)
#   ADMIN_PORT    the first replica's admin port, likewise (9201, as in
#                 docker/compose.cluster.yaml)
#   ARGS          more flags for every replica ("-max-conns 10000 -push-interval 1s")
#   REDIS_URL     an existing Redis to join; empty = start redis-server on a
#                 Unix socket in RUN_DIR (only for the variants that take -redis)
#   RUN_DIR       where the configuration, logs and pid files go
#                 (${TMPDIR:-/tmp}/knowngood-cluster-PORT)
#   KNOWNGOOD     the binary to run; empty = `make build`, then bin/knowngood
#   UPSTREAMS     front: the replicas' HOST:PORT addresses, separated by spaces
#   PORTS         front, conf: nginx's ports on LISTEN_HOST, separated by spaces (PORT);
#                 from one client address, connect() slows about tenfold past
#                 half the ephemeral port range (some 14,000 connections) to one
#                 port, so a run of more spreads its clients over several ports
#                 or source addresses
#   LISTEN_HOST   the address nginx listens on (127.0.0.1); set and empty = every
#                 address (in a container)
#   ERROR_LOG     conf: where nginx writes its errors ($RUN_DIR/nginx-error.log;
#                 /dev/stderr in a container, for its log)
#   NGINX_WORKERS, NGINX_NOFILE, NGINX_CONNECTIONS
#                 nginx's worker_processes (auto), worker_rlimit_nofile (131072)
#                 and worker_connections (65536): a proxied connection holds two
#                 descriptors, so a worker holds NGINX_NOFILE / 2 clients at most
#   NGINX_NEXT_UPSTREAM
#                 nginx's proxy_next_upstream: empty = nginx's default ("error
#                 timeout": a replica that refuses or resets a connection is
#                 skipped and the next one tried, so the client never sees it);
#                 "off" passes every refusal on to the client as a 502
#   NGINX_PROXY_BIND
#                 nginx's proxy_bind: empty = none (the kernel's choice);
#                 '$remote_addr' dials each replica from the client's own
#                 loopback address, so that clients spread over 127.0.0.2,
#                 127.0.0.3, ... spread nginx's connections to the replicas
#                 over as many addresses, and their ephemeral ports
#
# Every process is started in the background with its pid in RUN_DIR; down
# stops those pids, and only those (SIGTERM, SIGKILL after a timeout).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
VARIANT=${VARIANT:-empty}
REPLICAS=${REPLICAS:-3}
PORT=${PORT:-8080}
LB=${LB:-}
REPLICA_PORT=${REPLICA_PORT:-8201}
ADMIN_PORT=${ADMIN_PORT:-9201}
ARGS=${ARGS:-}
REDIS_URL=${REDIS_URL:-}
RUN_DIR=${RUN_DIR:-${TMPDIR:-/tmp}/knowngood-cluster-$PORT}
KNOWNGOOD=${KNOWNGOOD:-}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
UPSTREAMS=${UPSTREAMS:-}
PORTS=${PORTS:-$PORT}
NGINX_WORKERS=${NGINX_WORKERS:-auto}
NGINX_NOFILE=${NGINX_NOFILE:-131072}
NGINX_CONNECTIONS=${NGINX_CONNECTIONS:-65536}
NGINX_NEXT_UPSTREAM=${NGINX_NEXT_UPSTREAM:-}
NGINX_PROXY_BIND=${NGINX_PROXY_BIND:-}
LISTEN_HOST=${LISTEN_HOST-127.0.0.1}
ERROR_LOG=${ERROR_LOG:-$RUN_DIR/nginx-error.log}
# How long a start may take, and how long a process has between SIGTERM and
# SIGKILL (knowngood's default -shutdown-timeout is 5 s).
START_TIMEOUT=${START_TIMEOUT:-30}
STOP_TIMEOUT=${STOP_TIMEOUT:-10}

die() {
	echo "cluster.sh: $*" >&2
	exit 1
}

# alive PID: the process exists and is not a zombie (a replica whose parent,
# this script, has exited may wait for a reaper that never comes).
alive() {
	local state
	[ -r "/proc/$1/stat" ] || return 1
	state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# stop NAME PID: SIGTERM, then SIGKILL after STOP_TIMEOUT seconds.
stop() {
	local name=$1 pid=$2 i
	alive "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < STOP_TIMEOUT * 20; i++)); do
		alive "$pid" || return 0
		sleep 0.05
	done
	echo "cluster.sh: $name (pid $pid) did not exit within ${STOP_TIMEOUT}s of SIGTERM; killing it" >&2
	kill -KILL "$pid" 2>/dev/null || true
}

# pids: every pid this cluster started, one per line (the nginx workers
# too, recorded at start: they outlive a master that had to be killed).
pids() {
	cat "$RUN_DIR"/*.pid "$RUN_DIR"/nginx-workers 2>/dev/null | grep -E '^[0-9]+$' || true
}

# binary: the knowngood binary, built by the Makefile's build target unless
# KNOWNGOOD names one.
binary() {
	if [ -z "$KNOWNGOOD" ]; then
		make -C "$ROOT" -s build >&2 || die "make build failed"
		KNOWNGOOD=$ROOT/bin/knowngood
	fi
	[ -x "$KNOWNGOOD" ] || die "no knowngood binary at $KNOWNGOOD"
}

# about: the catalog's line on VARIANT (knowngood -list).
about() {
	"$KNOWNGOOD" -list | awk -v v="$VARIANT" '$1 == v { $1 = ""; print substr($0, 2) }'
}

# takes_redis: the variants that share state through Redis: the Socket.IO
# ones and the broadcast ones (knowngood refuses -redis for the others).
takes_redis() {
	case "$VARIANT" in broadcast-*) return 0 ;; esac
	case "$(about)" in Socket.IO*) return 0 ;; esac
	return 1
}

# nginx_conf: nginx.conf for this run: everything inside RUN_DIR, the
# shared proxy.conf and upstream-LB.conf with the replicas' addresses in
# place of the compose services.
nginx_conf() {
	local upstream=$ROOT/docker/nginx/upstream-$LB.conf servers="$1"
	cat <<EOF
# Generated by scripts/cluster.sh from docker/nginx/proxy.conf and
# docker/nginx/upstream-$LB.conf.
worker_processes $NGINX_WORKERS;
worker_rlimit_nofile $NGINX_NOFILE;
pid $RUN_DIR/nginx.pid;
error_log $ERROR_LOG warn;
events {
    worker_connections $NGINX_CONNECTIONS;
}
http {
    client_body_temp_path $RUN_DIR/nginx-tmp/body;
    proxy_temp_path $RUN_DIR/nginx-tmp/proxy;
    fastcgi_temp_path $RUN_DIR/nginx-tmp/fastcgi;
    uwsgi_temp_path $RUN_DIR/nginx-tmp/uwsgi;
    scgi_temp_path $RUN_DIR/nginx-tmp/scgi;
EOF
	# The compose services' server lines give way to this run's replicas.
	awk -v servers="$servers" '
		/^[ \t]*server kg[0-9]+:8080;/ { if (!done) printf "%s", servers; done = 1; next }
		{ print }
	' "$upstream"
	# One listen line per port. With several workers, reuseport gives each
	# its own accept queue, so that the kernel spreads the connections over
	# them evenly and no worker runs out of descriptors before the others.
	local listens="" p
	for p in $PORTS; do
		listens+="    listen ${LISTEN_HOST:+$LISTEN_HOST:}$p${2:+ $2};\n"
	done
	awk -v listens="$listens" '
		/^[ \t]*listen 8080;/ { printf "%s", listens; next }
		/^[ \t]*location \/ \{/ {
			print
			if (next_upstream != "") print "        proxy_next_upstream " next_upstream ";"
			if (proxy_bind != "") print "        proxy_bind " proxy_bind ";"
			next
		}
		{ print }
	' next_upstream="$NGINX_NEXT_UPSTREAM" proxy_bind="$NGINX_PROXY_BIND" "$ROOT/docker/nginx/proxy.conf"
	echo "}"
}

# wait_listening LOG: the "addr admin_addr" of a replica's listening line.
wait_listening() {
	local log=$1 pid=$2 i line
	for ((i = 0; i < START_TIMEOUT * 20; i++)); do
		line=$(sed -n 's/.*"msg":"listening".*"addr":"\([^"]*\)".*"admin_addr":"\([^"]*\)".*/\1 \2/p' "$log" | head -n 1)
		if [ -n "$line" ]; then
			echo "$line"
			return 0
		fi
		alive "$pid" || die "replica exited before listening: $(tail -n 3 "$log")"
		sleep 0.05
	done
	die "replica did not say it listens within ${START_TIMEOUT}s: $(tail -n 3 "$log")"
}

# healthy URL: /health answers 200.
healthy() {
	curl -fsS -o /dev/null --max-time 2 "$1/health"
}

# wait_healthy URL: healthy within START_TIMEOUT.
wait_healthy() {
	local i
	for ((i = 0; i < START_TIMEOUT * 20; i++)); do
		healthy "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	healthy "$1" || die "/health does not answer at $1"
}

up() {
	if [ -n "$(pids)" ]; then
		for pid in $(pids); do
			alive "$pid" && die "a cluster is already up in $RUN_DIR (pid $pid): scripts/cluster.sh down first"
		done
	fi
	[ -x "$NGINX" ] || die "nginx is missing: apt-get install -y nginx"
	[[ $REPLICAS =~ ^[1-9][0-9]*$ ]] || die "REPLICAS=$REPLICAS: want a count from 1"
	binary
	[ -n "$(about)" ] || die "VARIANT=$VARIANT is not a variant of knowngood -list"
	if [ -z "$LB" ]; then
		case "$(about)" in
		Socket.IO*) LB=ip_hash ;;
		*) LB=least_conn ;;
		esac
	fi
	[ -f "$ROOT/docker/nginx/upstream-$LB.conf" ] || die "LB=$LB: want least_conn, ip_hash, query_hash or round_robin"
	mkdir -p "$RUN_DIR/nginx-tmp"
	rm -f "$RUN_DIR"/*.pid "$RUN_DIR/nginx-workers" "$RUN_DIR/replicas"
	# A failure half-way leaves nothing running.
	trap 'if [ $? -ne 0 ]; then echo "cluster.sh: stopping what was started" >&2; down >&2; fi' EXIT

	local redis_args=()
	if takes_redis; then
		if [ -z "$REDIS_URL" ]; then
			command -v redis-server >/dev/null || die "redis-server is missing: apt-get install -y redis-server"
			rm -f "$RUN_DIR/redis.sock"
			redis-server --port 0 --unixsocket "$RUN_DIR/redis.sock" --unixsocketperm 700 \
				--save "" --appendonly no --daemonize no --loglevel warning \
				>"$RUN_DIR/redis.log" 2>&1 </dev/null &
			echo $! >"$RUN_DIR/redis.pid"
			for ((i = 0; i < START_TIMEOUT * 20; i++)); do
				[ -S "$RUN_DIR/redis.sock" ] && break
				alive "$(cat "$RUN_DIR/redis.pid")" || die "redis-server exited: $(tail -n 3 "$RUN_DIR/redis.log")"
				sleep 0.05
			done
			[ -S "$RUN_DIR/redis.sock" ] || die "redis-server made no socket within ${START_TIMEOUT}s"
			REDIS_URL=unix://$RUN_DIR/redis.sock
		fi
		redis_args=(-redis "$REDIS_URL")
	fi

	local servers="" i line addr admin port aport
	for ((i = 1; i <= REPLICAS; i++)); do
		port=0 aport=0
		[ "$REPLICA_PORT" = 0 ] || port=$((REPLICA_PORT + i - 1))
		[ "$ADMIN_PORT" = 0 ] || aport=$((ADMIN_PORT + i - 1))
		# shellcheck disable=SC2086 # ARGS is a list of flags
		"$KNOWNGOOD" -variant "$VARIANT" -addr "127.0.0.1:$port" -admin-addr "127.0.0.1:$aport" \
			-log-format json "${redis_args[@]}" $ARGS >"$RUN_DIR/replica$i.log" 2>&1 </dev/null &
		echo $! >"$RUN_DIR/replica$i.pid"
		line=$(wait_listening "$RUN_DIR/replica$i.log" "$(cat "$RUN_DIR/replica$i.pid")")
		read -r addr admin <<<"$line"
		wait_healthy "http://$admin"
		echo "$i $(cat "$RUN_DIR/replica$i.pid") $addr $admin" >>"$RUN_DIR/replicas"
		servers+="    server $addr;"$'\n'
	done

	start_nginx "$servers" ""

	echo "knowngood cluster: $REPLICAS x $VARIANT behind nginx ($LB)${REDIS_URL:+, Redis $REDIS_URL}"
	echo "  front    http://127.0.0.1:$PORT  (ws://127.0.0.1:$PORT/)"
	while read -r i pid addr admin; do
		echo "  replica$i target $addr  admin http://$admin  (pid $pid)  dashboard http://$admin/"
	done <"$RUN_DIR/replicas"
	echo "  run dir  $RUN_DIR  (logs, nginx.conf)"
}

# start_nginx SERVERS LISTEN_OPTIONS: nginx.conf for SERVERS (upstream
# server lines) on PORTS, checked, then nginx started and its workers'
# pids recorded.
start_nginx() {
	nginx_conf "$1" "$2" >"$RUN_DIR/nginx.conf"
	"$NGINX" -t -q -p "$RUN_DIR/" -c "$RUN_DIR/nginx.conf" -e "$RUN_DIR/nginx-error.log" ||
		die "nginx -t refused $RUN_DIR/nginx.conf: $(tail -n 3 "$RUN_DIR/nginx-error.log")"
	# nginx returns once its master has forked and its listener is bound.
	"$NGINX" -p "$RUN_DIR/" -c "$RUN_DIR/nginx.conf" -e "$RUN_DIR/nginx-error.log" </dev/null
	for ((i = 0; i < START_TIMEOUT * 20; i++)); do
		[ -s "$RUN_DIR/nginx.pid" ] && break
		sleep 0.05
	done
	[ -s "$RUN_DIR/nginx.pid" ] || die "nginx wrote no pid file: $(tail -n 3 "$RUN_DIR/nginx-error.log")"
	pgrep -P "$(cat "$RUN_DIR/nginx.pid")" >"$RUN_DIR/nginx-workers" || true
}

# upstream_servers: the upstream server lines of UPSTREAMS, after checking
# them and LB (which the caller has defaulted).
upstream_servers() {
	[ -n "$UPSTREAMS" ] || die "$1: UPSTREAMS is empty; want the replicas' HOST:PORT addresses"
	[ -f "$ROOT/docker/nginx/upstream-$LB.conf" ] || die "LB=$LB: want least_conn, ip_hash, query_hash or round_robin"
	local a
	for a in $UPSTREAMS; do
		echo "    server $a;"
	done
}

# conf: the nginx.conf front would write for UPSTREAMS, on stdout.
conf() {
	LB=${LB:-least_conn}
	local servers
	servers=$(upstream_servers conf)
	nginx_conf "$servers"$'\n' reuseport
}

# front: nginx alone (LB, least_conn by default) in front of UPSTREAMS.
front() {
	[ -x "$NGINX" ] || die "nginx is missing: apt-get install -y nginx"
	LB=${LB:-least_conn}
	local servers
	servers=$(upstream_servers front)$'\n'
	if [ -s "$RUN_DIR/nginx.pid" ] && alive "$(cat "$RUN_DIR/nginx.pid")"; then
		die "an nginx is already up in $RUN_DIR: scripts/cluster.sh down first"
	fi
	mkdir -p "$RUN_DIR/nginx-tmp"
	rm -f "$RUN_DIR/nginx.pid" "$RUN_DIR/nginx-workers"
	trap 'if [ $? -ne 0 ]; then down >&2; fi' EXIT
	start_nginx "$servers" reuseport
	echo "nginx ($LB, $NGINX_WORKERS workers) on ${LISTEN_HOST:-every address} ports $PORTS in front of $UPSTREAMS (pid $(cat "$RUN_DIR/nginx.pid"))"
}

status() {
	[ -f "$RUN_DIR/replicas" ] || die "no cluster in $RUN_DIR"
	local bad=0 i pid addr admin
	while read -r i pid addr admin; do
		if alive "$pid" && healthy "http://$admin" 2>/dev/null; then
			echo "replica$i ok    target $addr  admin http://$admin  (pid $pid)"
		else
			echo "replica$i DOWN  target $addr  admin http://$admin  (pid $pid)"
			bad=1
		fi
	done <"$RUN_DIR/replicas"
	pid=$(cat "$RUN_DIR/nginx.pid" 2>/dev/null || true)
	# Any HTTP answer will do: a target answers a plain GET / with an error.
	if [ -n "$pid" ] && alive "$pid" && curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/"; then
		echo "nginx    ok    http://127.0.0.1:$PORT  (pid $pid)"
	else
		echo "nginx    DOWN  http://127.0.0.1:$PORT"
		bad=1
	fi
	if [ -f "$RUN_DIR/redis.pid" ]; then
		pid=$(cat "$RUN_DIR/redis.pid")
		if alive "$pid"; then echo "redis    ok    unix://$RUN_DIR/redis.sock  (pid $pid)"; else
			echo "redis    DOWN"
			bad=1
		fi
	fi
	return $bad
}

down() {
	local pid f
	# The front first, so that no client is sent to a replica that is going.
	for f in "$RUN_DIR/nginx.pid" "$RUN_DIR"/replica*.pid "$RUN_DIR/redis.pid"; do
		[ -f "$f" ] || continue
		pid=$(cat "$f" 2>/dev/null || true)
		[ -z "$pid" ] || stop "$(basename "$f" .pid)" "$pid"
	done
	for pid in $(cat "$RUN_DIR/nginx-workers" 2>/dev/null || true); do
		stop "nginx worker" "$pid"
	done
	for pid in $(pids); do
		alive "$pid" && die "pid $pid is still running"
	done
	rm -f "$RUN_DIR"/*.pid "$RUN_DIR/nginx-workers" "$RUN_DIR/redis.sock"
	return 0
}

case "${1:-}" in
up) up ;;
front) front ;;
conf) conf ;;
down) down ;;
status) status ;;
*)
	echo "usage: scripts/cluster.sh up|down|status|front|conf (settings: see the top of this script)" >&2
	exit 2
	;;
esac
