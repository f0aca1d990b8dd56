#!/usr/bin/python3
"""sio_server: the real python-socketio server that knowngood's Socket.IO
targets stand in for, as the founding report ran it: python-socketio's
AsyncServer as an ASGI app on uvicorn, one process, one asyncio loop, with
the report's three connect handlers.

    /usr/bin/python3 scripts/python/sio_server.py [--host 127.0.0.1] [--port 0] \
        [--connect empty|async|blocking] [--delay-ms 50]

  empty     the connect handler does nothing
  async     it awaits asyncio.sleep(delay): nothing else waits
  blocking  it calls time.sleep(delay): the whole loop stops meanwhile

Every connect is accepted; the `echo` event is acknowledged with its
arguments. Prints one JSON line {"msg":"listening","addr":"HOST:PORT",...}
once the socket is bound, then serves until SIGINT or SIGTERM. Run it with
Debian's /usr/bin/python3 (python3-socketio 5.7, python3-uvicorn 0.17).
Exit status 2 on bad arguments.
"""

import argparse
import asyncio
import importlib.metadata
import json
import socket
import sys
import time

import socketio
import uvicorn


def parse_args(argv):
    p = argparse.ArgumentParser(prog="sio_server", allow_abbrev=False)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--connect", choices=["empty", "async", "blocking"], default="empty")
    p.add_argument("--delay-ms", type=int, default=50)
    args = p.parse_args(argv)
    if not 0 <= args.port <= 65535:
        p.error(f"argument --port: bad value {args.port}: want 0-65535")
    if args.delay_ms < 0:
        p.error(f"argument --delay-ms: bad value {args.delay_ms}: want 0 or more")
    return args


def build(connect, delay_s):
    sio = socketio.AsyncServer(async_mode="asgi")

    if connect == "blocking":

        @sio.event
        async def connect(sid, environ, auth=None):
            time.sleep(delay_s)  # the report's synchronous call: the loop stops

    elif connect == "async":

        @sio.event
        async def connect(sid, environ, auth=None):
            await asyncio.sleep(delay_s)

    @sio.event
    async def echo(sid, *args):
        return args

    return socketio.ASGIApp(sio)


def main():
    args = parse_args(sys.argv[1:])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    host, port = sock.getsockname()[:2]
    app = build(args.connect, args.delay_ms / 1000)
    print(json.dumps({
        "msg": "listening",
        "addr": f"{host}:{port}",
        "python-socketio": importlib.metadata.version("python-socketio"),
        "uvicorn": uvicorn.__version__,
        "connect": args.connect,
    }), flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
