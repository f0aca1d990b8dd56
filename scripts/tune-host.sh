#!/usr/bin/env bash
# Shows, and with --apply sets, the host settings that high-concurrency runs
# need: the listen backlog, the SYN backlog, the client port range, TIME_WAIT
# reuse, the system-wide and per-process open-files limits. Prints each value
# before and after; a value it may not change (containers often forbid it)
# gets a plain message, and the script goes on.
#
#   scripts/tune-host.sh            # show
#   sudo scripts/tune-host.sh --apply
set -uo pipefail

apply=false
case "${1:-}" in
	"") ;;
	--apply) apply=true ;;
	*) echo "usage: $0 [--apply]" >&2; exit 2 ;;
esac

# name, wanted value (at least), why
settings=(
	"net.core.somaxconn|65535|accept backlog: a burst of connects beyond it is dropped or reset"
	"net.ipv4.tcp_max_syn_backlog|65535|half-open connections waiting for their ACK"
	"net.ipv4.ip_local_port_range|1024 65535|client ports: one per connection to the same target address"
	"net.ipv4.tcp_tw_reuse|1|reuse TIME_WAIT ports for new outgoing connections"
	"fs.file-max|2097152|open files, system-wide"
)

path() { echo "/proc/sys/${1//.//}"; }

# enough NAME VALUE: is the value good enough already? Only ever raise a
# limit: a larger value, a wider port range, TIME_WAIT reuse on (1, or 2 =
# loopback only, which is where knowngood's traffic goes).
enough() {
	local name=$1 have=$2 want=$3
	case "$name" in
	net.ipv4.tcp_tw_reuse) [ "$have" != 0 ] ;;
	net.ipv4.ip_local_port_range)
		read -r hl hh <<<"$have"
		read -r wl wh <<<"$want"
		[ "$hl" -le "$wl" ] && [ "$hh" -ge "$wh" ] ;;
	*) [ "$have" -ge "$want" ] ;;
	esac
}

for s in "${settings[@]}"; do
	IFS='|' read -r name want why <<<"$s"
	p=$(path "$name")
	if [ ! -r "$p" ]; then
		printf '%-30s not available here (%s)\n' "$name" "$why"
		continue
	fi
	before=$(tr -s '\t ' ' ' <"$p")
	if ! $apply; then
		verdict="want $want"
		enough "$name" "$before" "$want" && verdict="ok (want $want)"
		printf '%-30s %-14s %-20s %s\n' "$name" "$before" "$verdict" "$why"
		continue
	fi
	if enough "$name" "$before" "$want"; then
		printf '%-30s %s (enough already)\n' "$name" "$before"
	elif sysctl -q -w "$name=$want" 2>/dev/null; then
		printf '%-30s %s -> %s\n' "$name" "$before" "$(tr -s '\t ' ' ' <"$p")"
	else
		printf '%-30s %s: may not be changed here (read-only /proc/sys or no privilege; containers forbid it): set it on the host\n' "$name" "$before"
	fi
done

soft=$(ulimit -Sn)
hard=$(ulimit -Hn)
want=1048576
if ! $apply; then
	printf '%-30s soft %s, hard %s; want %s (ulimit -n; LimitNOFILE= for a service; ulimits: in compose)\n' "open files (this shell)" "$soft" "$hard" "$want"
	exit 0
fi
if ulimit -Hn "$want" 2>/dev/null && ulimit -Sn "$want" 2>/dev/null; then
	printf '%-30s soft %s, hard %s -> %s for this shell only: run the target from it, or raise it in /etc/security/limits.conf\n' "open files" "$soft" "$hard" "$(ulimit -Sn)"
else
	ulimit -Sn "$hard" 2>/dev/null
	printf '%-30s soft %s -> %s (the hard limit %s may not be raised here: a container'"'"'s is set by its runtime, e.g. compose ulimits)\n' "open files" "$soft" "$(ulimit -Sn)" "$hard"
fi
