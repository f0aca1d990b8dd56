#!/usr/bin/env bash
# Installs what knowngood's tests need besides Go, and only what is missing:
# the pinned npm packages (socket.io-client, socket.io, ws) under scripts/,
# and Debian's python3-socketio and python3-websockets for /usr/bin/python3.
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
