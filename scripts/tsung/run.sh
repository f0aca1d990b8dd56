#!/usr/bin/env bash
# Runs scripts/tsung/ws-echo.xml against HOST PORT (default 127.0.0.1 8083)
# with Debian's tsung, and prints the totals of its log (users, connects,
# requests, matches). The log directory is printed last.
set -euo pipefail
host=${1:-127.0.0.1}
port=${2:-8083}
dir=$(mktemp -d "${TMPDIR:-/tmp}/knowngood-tsung.XXXXXX")
sed -e "s/TSUNG_HOST/$host/" -e "s/TSUNG_PORT/$port/" "$(dirname "$0")/ws-echo.xml" > "$dir/ws-echo.xml"
# tsung keeps its state in ~/.tsung; HOME keeps runs apart. Its Erlang
# node is named tsung_controller@HOST, one per machine in epmd: a second run
# at the same time (another user, another test) would fail on "name in
# use", so -i gives each run a node of its own (its directory's suffix).
# -n: no web dashboard. It would listen on 8091, a fixed port that a
# target may hold (docker/compose.host.yaml's broadcast-nbio), and a run
# beside it would find its port taken.
HOME=$dir tsung -n -i "${dir##*.}" -f "$dir/ws-echo.xml" -l "$dir/log" start >"$dir/tsung.out" 2>&1 || { cat "$dir/tsung.out"; exit 1; }
grep -hE '^stats: (users_count|finish_users_count|connect|request|match|match_abort|error_[a-z_]*) ' "$dir"/log/*/tsung.log | awk '{ n[$2] += $3 } END { for (k in n) print k, n[k] }' | sort
echo "log: $dir"
