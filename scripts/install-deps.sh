#!/usr/bin/env bash
# Installs what knowngood's tests and recipes need besides Go and Node, and
# only what is missing. Each step says what it installs, why, and about how
# long it takes on a cold 2-core machine before it starts; what is present
# is skipped with a line that says so.
#
#   scripts/install-deps.sh         everything (make deps, make test)
#   scripts/install-deps.sh quick   the JS and Python clients only (make test-quick)
#
# Everything:
# - npm ci under scripts/: socket.io-client (4, and 2 as socket.io-client-v2),
#   socket.io, ws and @socket.io/redis-adapter with its redis client, pinned: the real JS
#   clients and the Node reference servers the tests run; @socket.io/admin-ui and
#   @mdi/font, whose files servers/internal/adminui vendors (its test compares them).
# - Debian's python3-socketio, python3-aiohttp, python3-websockets and
#   python3-uvicorn for /usr/bin/python3: the real Python clients, and the
#   real python-socketio server on uvicorn that the blocking variant is
#   set beside.
# - Debian's docker.io, prometheus (with promtool), tsung, python3-locust
#   with python3-websocket, redis-server, nginx and chromium: the image and
#   compose tests, make observe and the scrape-config tests, the tsung and
#   Locust recipes, the cluster, and the browser tests of the dashboard and
#   the HTML reports; iproute2 for ss, which the burst experiment reads the
#   target's listener drops with.
# - Debian's python3-fastapi, python3-uvloop, libnetty-java,
#   libtomcat10-java and (where javac is missing) openjdk-17-jdk-headless:
#   the frameworks experiment's servers (scripts/python, scripts/java),
#   whose Java ones scripts/java/build.sh then compiles.
# - Docker Compose v2 as a docker CLI plugin and k6, both built from their
#   Go modules, and the artillery and wscat recipes (npm ci each).
# - kubectl, where it is missing, from dl.k8s.io (the docker/k8s tests).
#
# apt-get needs root: when a Debian package is missing and this is not
# root, it says which and stops (exit 1) before changing anything.
set -euo pipefail
cd "$(dirname "$0")"

mode=${1:-all}
case $mode in
all | quick) ;;
*)
	echo "install-deps: unknown mode '$mode': want all (the default) or quick" >&2
	exit 2
	;;
esac

started=$SECONDS
installed=0
say() { echo "install-deps: $*"; }
# took prints how long the step that started at $1 took.
took() { say "  done in $((SECONDS - $1))s"; }

for c in go node npm; do
	if ! command -v "$c" >/dev/null; then
		say "$c is not on PATH; install Go 1.26 and Node 20 with npm first, then run make deps again" >&2
		exit 1
	fi
done

# npm_current DIR: DIR/node_modules holds what DIR/package-lock.json pins
# (npm's own record of the installed tree, node_modules/.package-lock.json,
# names every locked package at its locked version). Comparing contents, not
# file times, keeps a fresh checkout from reinstalling an unchanged tree.
npm_current() {
	[ -f "$1/node_modules/.package-lock.json" ] || return 1
	(cd "$1" && node -e '
		const want = require("./package-lock.json").packages || {};
		const have = require("./node_modules/.package-lock.json").packages || {};
		for (const [k, p] of Object.entries(want)) {
			if (!k) continue;
			if (have[k] ? have[k].version !== p.version : !p.optional) process.exit(1);
		}')
}

# npm_step DIR WHY TIME: npm ci in scripts/DIR unless it is current.
npm_step() {
	local d=scripts/$1
	[ "$1" = . ] && d=scripts
	if npm_current "$1"; then
		say "have $d/node_modules as $d/package-lock.json pins it ($2)"
		return
	fi
	say "npm ci in $d: $2 (~$3 cold)"
	local t=$SECONDS
	(cd "$1" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
	took "$t"
	installed=$((installed + 1))
}

npm_step . "socket.io-client (4, and 2 for -allow-eio3), socket.io, ws, @socket.io/redis-adapter: the JS clients and Node servers the tests run; @socket.io/admin-ui, @mdi/font: what -admin-ui vendors" "10 s"

# Debian packages: what is missing, and why each is needed, first; then one
# apt-get for all of them, in the background.
apt_missing=()
apt_why=()
if ! /usr/bin/python3 -c 'import socketio, aiohttp, websockets, uvicorn' 2>/dev/null; then
	apt_missing+=(python3-socketio python3-aiohttp python3-websockets python3-uvicorn)
	apt_why+=("python3-socketio python3-aiohttp python3-websockets python3-uvicorn: the Python clients, and python-socketio's server on uvicorn (/usr/bin/python3)")
fi
if [ "$mode" = all ]; then
	while IFS='|' read -r cmds pkg why; do
		for c in $cmds; do
			if ! command -v "$c" >/dev/null; then
				read -ra pkgs <<<"$pkg" # one or more packages
				apt_missing+=("${pkgs[@]}")
				apt_why+=("$pkg: $why")
				break
			fi
		done
	done <<-'EOF'
		dockerd docker|docker.io|the Docker engine and CLI: make docker, the image and compose tests (they start their own dockerd)
		prometheus promtool|prometheus|make observe, promtool over the scrape configs, the test that scrapes a live target
		tsung|tsung|make tsung and its test
		locust|python3-locust python3-websocket|make locust and its test: Locust with python-socketio's Client over WebSocket (websocket-client), the cluster report's client
		redis-server|redis-server|the cluster: make cluster, the Redis tests (each starts its own on a free port)
		nginx|nginx|the cluster's front: make cluster and its tests
		chromium|chromium|headless browser: the tests of the admin dashboard and of loadgen's HTML reports
		unzip|unzip|the release test, which unpacks make dist's Windows archives as a user would
		ss|iproute2|ss: the burst experiment reads the target's listener drops with it (and its test)
		javac|openjdk-17-jdk-headless|javac for scripts/java/build.sh: the frameworks experiment's Netty and Tomcat servers
	EOF
	# The frameworks experiment's servers: libraries, not commands, so
	# each is looked for as its server loads it.
	while IFS='|' read -r check pkg why; do
		if ! eval "$check" 2>/dev/null; then
			apt_missing+=("$pkg")
			apt_why+=("$pkg: $why")
		fi
	done <<-'EOF'
		/usr/bin/python3 -c 'import fastapi'|python3-fastapi|the frameworks experiment's FastAPI echo server (scripts/python/fastapi_echo_server.py)
		/usr/bin/python3 -c 'import uvloop'|python3-uvloop|the frameworks experiment's websockets and FastAPI servers on uvloop
		test -f /usr/share/java/netty-codec-http.jar|libnetty-java|Netty 4.1: the frameworks experiment's Netty echo server (scripts/java/NettyEcho.java)
		test -f /usr/share/java/tomcat10-websocket.jar|libtomcat10-java|embedded Tomcat 10 and its Jakarta WebSocket: the frameworks experiment's Spring WebSocket row (scripts/java/TomcatEcho.java)
	EOF
fi
if [ ${#apt_missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		say "needs root to install Debian packages (missing: ${apt_missing[*]}): run 'sudo make deps', or as root 'apt-get install -y ${apt_missing[*]}' and then make deps again" >&2
		exit 1
	fi
	say "apt-get install ${apt_missing[*]} (with apt-get update first; ~2 min cold for all, less for fewer):"
	for w in "${apt_why[@]}"; do
		say "  $w"
	done
	export DEBIAN_FRONTEND=noninteractive
	# apt-get waits on the network and the disk more than on the CPU, so it
	# runs beside the Go builds below (quick mode has none, and waits).
	(
		t=$SECONDS
		apt-get update -qq
		apt-get install -y -qq "${apt_missing[@]}" >/dev/null
		say "  apt-get: done in $((SECONDS - t))s"
	) &
	apt_pid=$!
	installed=$((installed + 1))
else
	say "have Debian's python3-socketio, python3-aiohttp, python3-websockets, python3-uvicorn$([ "$mode" = all ] && echo ", docker.io, prometheus, tsung, python3-locust, redis-server, nginx, chromium, python3-fastapi, python3-uvloop, libnetty-java, libtomcat10-java, a JDK")"
fi

# apt_wait waits for the apt-get started above, if any; its failure stops
# the script (set -e).
apt_wait() {
	if [ -n "${apt_pid:-}" ]; then
		wait "$apt_pid"
		apt_pid=
	fi
}

if [ "$mode" = quick ]; then
	apt_wait
	say "quick: skipped Docker Compose, k6, artillery, wscat and the Debian tools (make deps installs them)"
	say "finished in $((SECONDS - started))s$([ $installed = 0 ] && echo ", nothing to install")"
	exit 0
fi

# Docker Compose v2 as a docker CLI plugin, built from its Go module (Debian
# has only the Python 1.x, which cannot run docker/compose.host.yaml). Its
# go.mod has exclude directives, so go install refuses it: build it in the
# module's own directory. As root it goes where every user's docker finds
# it; otherwise into ~/.docker, where the docker CLI also looks.
COMPOSE_VERSION=v2.40.3
plugin=/usr/local/lib/docker/cli-plugins/docker-compose
if [ "$(id -u)" != 0 ]; then
	plugin=$HOME/.docker/cli-plugins/docker-compose
fi
if [ "$("$plugin" version --short 2>/dev/null)" = "${COMPOSE_VERSION#v}" ]; then
	say "have Docker Compose $COMPOSE_VERSION ($plugin)"
else
	say "building Docker Compose $COMPOSE_VERSION from source into $plugin (go build; ~8 min cold on 2 busy cores, seconds when Go's build cache has it): Debian's docker-compose is 1.x, which cannot run docker/compose.host.yaml"
	t=$SECONDS
	dir=$(go mod download -json "github.com/docker/compose/v2@$COMPOSE_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	mkdir -p "$(dirname "$plugin")"
	(cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" -o "$plugin" ./cmd)
	took "$t"
	installed=$((installed + 1))
fi

# k6, pinned, into GOPATH/bin.
K6_VERSION=v1.8.1
k6="$(go env GOPATH)/bin/k6"
if "$k6" version 2>/dev/null | grep -q "k6 $K6_VERSION "; then
	say "have k6 $K6_VERSION ($k6)"
else
	say "building k6 $K6_VERSION from source into $k6 (go install; ~3.5-5 min cold): make k6-echo, make k6-socketio and their tests"
	t=$SECONDS
	go install "go.k6.io/k6@$K6_VERSION"
	took "$t"
	installed=$((installed + 1))
fi

# kubectl (with kustomize built in) for the tests of docker/k8s, only
# where it is missing: these machines carry 1.32, and Debian's
# kubernetes-client would conflict with it. From the Kubernetes project's
# release site, checked against its published SHA-256.
KUBECTL_VERSION=v1.32.4
if command -v kubectl >/dev/null; then
	say "have kubectl ($(command -v kubectl))"
else
	arch=$(dpkg --print-architecture 2>/dev/null || uname -m)
	case $arch in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; esac
	url=https://dl.k8s.io/release/$KUBECTL_VERSION/bin/linux/$arch/kubectl
	dest=/usr/local/bin/kubectl
	[ "$(id -u)" = 0 ] || dest=$(go env GOPATH)/bin/kubectl
	say "downloading kubectl $KUBECTL_VERSION from $url into $dest (~5 s): the kustomize renders of docker/k8s in its tests"
	t=$SECONDS
	tmp=$(mktemp)
	curl -fsSL -o "$tmp" "$url"
	echo "$(curl -fsSL "$url.sha256")  $tmp" | sha256sum --check --quiet
	install -m 0755 "$tmp" "$dest"
	rm -f "$tmp"
	took "$t"
	installed=$((installed + 1))
fi

# The npm recipes, each with its own lockfile.
npm_step artillery "artillery 2 with its ws and socketio engines: make artillery-ws, make artillery-socketio" "2 min"
npm_step wscat "wscat: make wscat" "5 s"
apt_wait

# The frameworks experiment's Java servers, against the jars just checked
# or installed; build.sh compiles only what changed.
say "scripts/java/build.sh: the frameworks experiment's Netty and Tomcat servers (javac; ~5 s cold, nothing when current)"
java/build.sh

say "finished in $((SECONDS - started))s$([ $installed = 0 ] && echo ", nothing to install")"
