#!/usr/bin/python3
"""ws_echo_server: the websockets (Python asyncio) and websockets + uvloop
rows of the frameworks experiment, as the benchmark report wrote them: the
websockets library's own server (websockets.serve) echoing every message
back as it came, text as text and bytes as bytes, with the library's
defaults otherwise (1 MiB messages, pings every 20 s) but no compression,
and no logging. asyncio, and uvloop in its place, set TCP_NODELAY on every
TCP transport they make, so the server does not.

    /usr/bin/python3 scripts/python/ws_echo_server.py [--host 127.0.0.1] [--port 0] \
        [--loop asyncio|uvloop]

Prints one JSON line {"msg":"listening","addr":"HOST:PORT","framework":
"websockets 10.4","loop":"asyncio","python":"3.11.2"} once it accepts,
with the versions as installed (and uvloop's with --loop uvloop), then serves until SIGINT or SIGTERM and exits 0. --port 0 takes
a free port. Run it with Debian's /usr/bin/python3 (python3-websockets,
python3-uvloop). Exit status 2 on bad arguments.
"""

import argparse
import asyncio
import json
import platform
import signal
import sys

import websockets


def parse_args(argv):
    p = argparse.ArgumentParser(prog="ws_echo_server", allow_abbrev=False)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    args = p.parse_args(argv)
    if not 0 <= args.port <= 65535:
        p.error(f"argument --port: bad value {args.port}: want 0-65535")
    return args


async def echo(ws):
    async for message in ws:
        await ws.send(message)


async def serve(args, versions):
    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set_result, None)
    async with websockets.serve(echo, args.host, args.port, compression=None) as server:
        host, port = server.sockets[0].getsockname()[:2]
        print(json.dumps({
            "msg": "listening",
            "addr": f"{host}:{port}",
            "framework": f"websockets {websockets.__version__}",
            "loop": args.loop,
            **versions,
        }), flush=True)
        await stop


def main():
    args = parse_args(sys.argv[1:])
    versions = {"python": platform.python_version()}
    if args.loop == "uvloop":
        import uvloop

        uvloop.install()
        versions["uvloop"] = uvloop.__version__
    asyncio.run(serve(args, versions))


if __name__ == "__main__":
    main()
