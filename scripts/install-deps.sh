#!/usr/bin/env bash
# Installs what knowngood's tests need besides Go, and only what is missing:
# the pinned npm packages (socket.io-client, socket.io, ws, and
# @socket.io/redis-adapter with its redis client) under scripts/,
# Debian's python3-socketio and python3-websockets for /usr/bin/python3, and
# the recipes' tools: docker.io, Docker Compose v2, prometheus, tsung, k6,
# artillery and wscat; redis-server and nginx for the cluster.
set -euo pipefail
cd "$(dirname "$0")"

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
	echo "install-deps: npm ci (scripts/package-lock.json)"
	npm ci --no-audit --no-fund --loglevel=error
fi

if ! /usr/bin/python3 -c 'import socketio, aiohttp, websockets' 2>/dev/null; then
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: /usr/bin/python3 lacks socketio/aiohttp/websockets; run as root, or:" >&2
		echo "  apt-get install -y python3-socketio python3-aiohttp python3-websockets" >&2
		exit 1
	fi
	echo "install-deps: apt-get install python3-socketio python3-aiohttp python3-websockets"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq python3-socketio python3-aiohttp python3-websockets >/dev/null
fi

# Docker (engine and CLI), Prometheus (with promtool), tsung, and the
# cluster's Redis and nginx (the tests start their own on free ports), from
# Debian.
missing=()
for c in dockerd:docker.io prometheus:prometheus promtool:prometheus tsung:tsung redis-server:redis-server nginx:nginx; do
	command -v "${c%%:*}" >/dev/null || missing+=("${c##*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: missing ${missing[*]}; run as root, or: apt-get install -y ${missing[*]}" >&2
		exit 1
	fi
	echo "install-deps: apt-get install ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Docker Compose v2 as a docker CLI plugin, built from its Go module (Debian
# has only the Python 1.x, which cannot run docker/compose.host.yaml). Its
# go.mod has exclude directives, so go install refuses it: build it in the
# module's own directory.
COMPOSE_VERSION=v2.40.3
plugin=/usr/local/lib/docker/cli-plugins/docker-compose
if [ "$("$plugin" version --short 2>/dev/null)" != "${COMPOSE_VERSION#v}" ]; then
	echo "install-deps: building docker compose $COMPOSE_VERSION (a few minutes)"
	dir=$(go mod download -json "github.com/docker/compose/v2@$COMPOSE_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	mkdir -p "$(dirname "$plugin")"
	(cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" -o "$plugin" ./cmd)
fi

# k6, pinned, into GOPATH/bin.
K6_VERSION=v1.8.1
k6="$(go env GOPATH)/bin/k6"
if ! "$k6" version 2>/dev/null | grep -q "k6 $K6_VERSION "; then
	echo "install-deps: go install go.k6.io/k6@$K6_VERSION (a few minutes)"
	go install "go.k6.io/k6@$K6_VERSION"
fi

# The npm recipes, each with its own lockfile.
for d in artillery wscat; do
	if [ ! -d "$d/node_modules" ] || [ "$d/package-lock.json" -nt "$d/node_modules/.package-lock.json" ]; then
		echo "install-deps: npm ci (scripts/$d/package-lock.json)"
		(cd "$d" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
	fi
done
