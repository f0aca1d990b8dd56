#!/usr/bin/python3
"""sio_connect: open N Socket.IO connections at once with python-socketio's
AsyncClient and report how many completed the namespace CONNECT within the
deadline, as one JSON line on stdout.

    /usr/bin/python3 scripts/clients/sio_connect.py --url http://127.0.0.1:8080 \
        --n 200 --transports websocket|polling|polling,websocket \
        --deadline-ms 15000 [--wait-ms 1000] [--echo] [--namespace /] \
        [--latencies]

Run it with Debian's /usr/bin/python3 (python3-socketio 5.7): the python3
first on PATH may not see that package.

The output has the same shape as scripts/clients/sio-connect.mjs:
    {"client":"python-socketio","version":"5.7.2","attempts":N,"connected":n,
     "echoed":n,"failed":n,"errors":{"message":count},"p50_ms":..,"p95_ms":..,
     "p99_ms":..,"max_ms":..,"total_ms":..,"sent":n,"received":n}
failed = attempts - connected, and the counts in errors add up to failed.
With --latencies it also has "latencies_ms": every connected one's, sorted,
which shows whether a burst completed in waves or one by one.
Latency is from a connection's start to its namespace "connect" event;
percentiles are nearest-rank over the connected ones (null when none
connected). --wait-ms sets python-socketio's own wait_timeout, which starts
at the Engine.IO open, not at the attempt's start: --wait-ms 1000 is the
library's default, the founding report's client (connect(url,
transports=['websocket']) as written); the whole attempt is still bounded
by --deadline-ms. Without it the wait is what is left of the deadline. total_ms covers the connect phase only. With --echo, every
connected client then calls `echo` with a payload and waits for the same
payload back in the ack, within a second window of --deadline-ms; echo
failures are counted in "echo_errors", not in errors. sent counts the echo
calls made and received the acks that came back (whatever their payload):
the server's messages received and sent (0 without --echo).
Exit status: 0 when it ran (the counts tell the result), 2 on bad arguments.
"""

import asyncio
import importlib.metadata
import json
import math
import sys
import time

import socketio

from cliflags import ArgumentParser, positive_int

TRANSPORTS = {
    "websocket": ["websocket"],
    "polling": ["polling"],
    "polling,websocket": ["polling", "websocket"],
}


def parse_args(argv):
    p = ArgumentParser(prog="sio_connect", allow_abbrev=False)
    p.add_argument("--url", required=True)
    p.add_argument("--n", type=positive_int(1000000), default=1)
    p.add_argument("--transports", choices=list(TRANSPORTS), default="websocket")
    p.add_argument("--deadline-ms", type=positive_int(3600000), default=15000)
    p.add_argument("--wait-ms", type=positive_int(3600000), default=None)
    p.add_argument("--echo", action="store_true")
    p.add_argument("--namespace", default="/")
    p.add_argument("--latencies", action="store_true", help='add "latencies_ms": each connect\'s, sorted')
    p.add_argument("--insecure", action="store_true", help="https: accept any certificate (a self-signed test pair)")
    args = p.parse_args(argv)
    if not args.url.startswith(("http://", "https://", "ws://", "wss://")):
        p.error(f"argument --url: bad value {args.url!r}: want http://HOST:PORT")
    if not args.namespace.startswith("/"):
        p.error(f"argument --namespace: bad value {args.namespace!r}: want a path starting with /")
    return args


def count(errors, key):
    errors[key] = errors.get(key, 0) + 1


def message_of(data):
    """The message of a connect_error payload or an exception."""
    if isinstance(data, dict) and "message" in data:
        return str(data["message"])
    if isinstance(data, BaseException):
        return str(data.args[0]) if data.args else type(data).__name__
    return str(data)


class Conn:
    """One client and what happened to it."""

    def __init__(self, args):
        self.args = args
        self.sio = socketio.AsyncClient(
            reconnection=False,
            handle_sigint=False,
            request_timeout=args.deadline_ms / 1000,
            ssl_verify=not args.insecure,
        )
        self.connected_at = None
        self.latency_ms = None
        self.error = None
        self.rejected = asyncio.Event()
        self.acked = False
        ns = args.namespace

        @self.sio.on("connect", namespace=ns)
        async def on_connect():
            self.connected_at = time.perf_counter()

        @self.sio.on("connect_error", namespace=ns)
        async def on_connect_error(data=None, *_):
            self.error = message_of(data)
            self.rejected.set()

    async def connect(self, start, deadline_s):
        """Connect; the namespace CONNECT must complete by start+deadline_s."""
        t0 = time.perf_counter()
        remaining = max(0.001, start + deadline_s - t0)
        connect = asyncio.ensure_future(
            self.sio.connect(
                self.args.url,
                transports=TRANSPORTS[self.args.transports],
                namespaces=[self.args.namespace],
                wait=True,
                wait_timeout=self.args.wait_ms / 1000 if self.args.wait_ms else remaining,
            )
        )
        rejected = asyncio.ensure_future(self.rejected.wait())
        try:
            # A rejected namespace only makes connect() give up at
            # wait_timeout: race it with the connect_error event.
            await asyncio.wait_for(
                asyncio.wait({connect, rejected}, return_when=asyncio.FIRST_COMPLETED),
                remaining,
            )
        except asyncio.TimeoutError:
            pass
        for task in (connect, rejected):
            if not task.done():
                task.cancel()
        await asyncio.gather(connect, rejected, return_exceptions=True)
        if connect.done() and not connect.cancelled() and connect.exception() is None:
            self.latency_ms = ((self.connected_at or time.perf_counter()) - t0) * 1000
            return True
        if self.error is None:
            if connect.cancelled():
                self.error = "deadline exceeded"
            else:
                self.error = message_of(connect.exception())
        return False

    async def echo(self, i, deadline_s):
        payload = f"echo-{i}"
        try:
            got = await self.sio.call("echo", payload, namespace=self.args.namespace, timeout=deadline_s)
        except socketio.exceptions.TimeoutError:
            return "ack timeout"
        except Exception as exc:  # noqa: BLE001: the message is the report
            return message_of(exc)
        self.acked = True
        return None if got == payload else "wrong ack payload"

    async def close(self):
        try:
            await asyncio.wait_for(self.sio.disconnect(), 5)
        except Exception:  # noqa: BLE001: closing is best effort
            pass
        http = getattr(self.sio.eio, "http", None)
        if http is not None and not http.closed:
            await http.close()


def percentile(sorted_ms, p):
    if not sorted_ms:
        return None
    return round(sorted_ms[max(0, math.ceil(p / 100 * len(sorted_ms)) - 1)], 3)


async def run(args):
    deadline_s = args.deadline_ms / 1000
    conns = [Conn(args) for _ in range(args.n)]
    start = time.perf_counter()
    ok = await asyncio.gather(*(c.connect(start, deadline_s) for c in conns))
    total_ms = (time.perf_counter() - start) * 1000

    errors = {}
    for c, good in zip(conns, ok):
        if not good:
            count(errors, c.error)
    connected = [c for c, good in zip(conns, ok) if good]

    echoed = 0
    echo_errors = {}
    if args.echo:
        results = await asyncio.gather(*(c.echo(i, deadline_s) for i, c in enumerate(connected)))
        for err in results:
            if err is None:
                echoed += 1
            else:
                count(echo_errors, err)

    await asyncio.gather(*(c.close() for c in conns))

    lat = sorted(c.latency_ms for c in connected)
    report = {
        "client": "python-socketio",
        "version": importlib.metadata.version("python-socketio"),
        "attempts": args.n,
        "connected": len(connected),
        "echoed": echoed,
        "failed": args.n - len(connected),
        "errors": errors,
        "p50_ms": percentile(lat, 50),
        "p95_ms": percentile(lat, 95),
        "p99_ms": percentile(lat, 99),
        "max_ms": round(lat[-1], 3) if lat else None,
        "total_ms": round(total_ms, 3),
        "sent": len(connected) if args.echo else 0,
        "received": sum(1 for c in connected if c.acked),
    }
    if args.echo:
        report["echo_errors"] = echo_errors
    if args.latencies:
        report["latencies_ms"] = [round(ms, 3) for ms in lat]
    return report


def main():
    args = parse_args(sys.argv[1:])
    report = asyncio.run(run(args))
    print(json.dumps(report, separators=(",", ":")), flush=True)


if __name__ == "__main__":
    main()
