#!/usr/bin/python3
"""fastapi_echo_server: the FastAPI (uvicorn) and FastAPI + uvloop rows of
the frameworks experiment, as the benchmark report wrote them: a FastAPI
app with one WebSocket route, "/", that receives each message and sends it
back, text as text and bytes as bytes, served by uvicorn with its access
log off and its log at "warning", and no compression. asyncio, and uvloop
in its place, set TCP_NODELAY on every TCP transport they make, so the
server does not.

    /usr/bin/python3 scripts/python/fastapi_echo_server.py [--host 127.0.0.1] [--port 0] \
        [--loop asyncio|uvloop]

Prints one JSON line {"msg":"listening","addr":"HOST:PORT","framework":
"fastapi 0.92.0","loop":"asyncio",...} once uvicorn serves, with the
versions as installed, then serves until SIGINT or SIGTERM (uvicorn's own
graceful shutdown) and exits 0. --port 0 takes a free port: the socket is
bound here and handed to uvicorn, so that the port is known. Run it with
Debian's /usr/bin/python3 (python3-fastapi, python3-uvicorn,
python3-uvloop). Exit status 2 on bad arguments.
"""

import argparse
import json
import platform
import socket
import sys

import fastapi
import starlette
import uvicorn
from fastapi import FastAPI, WebSocket


def parse_args(argv):
    p = argparse.ArgumentParser(prog="fastapi_echo_server", allow_abbrev=False)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    args = p.parse_args(argv)
    if not 0 <= args.port <= 65535:
        p.error(f"argument --port: bad value {args.port}: want 0-65535")
    return args


app = FastAPI()


@app.websocket("/")
async def echo(ws: WebSocket):
    await ws.accept()
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            return
        if message.get("text") is not None:
            await ws.send_text(message["text"])
        else:
            await ws.send_bytes(message["bytes"])


class Server(uvicorn.Server):
    """uvicorn's server that says it listens once it serves."""

    def __init__(self, config, line):
        super().__init__(config)
        self.line = line

    async def startup(self, sockets=None):
        await super().startup(sockets=sockets)
        if self.started:
            print(json.dumps(self.line), flush=True)


def main():
    args = parse_args(sys.argv[1:])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    host, port = sock.getsockname()[:2]
    line = {
        "msg": "listening",
        "addr": f"{host}:{port}",
        "framework": f"fastapi {fastapi.__version__}",
        "loop": args.loop,
        "uvicorn": uvicorn.__version__,
        "starlette": starlette.__version__,
        "python": platform.python_version(),
    }
    if args.loop == "uvloop":
        import uvloop

        line["uvloop"] = uvloop.__version__
    # ws_per_message_deflate: uvicorn offers compression by default; the
    # report's servers ran without it.
    config = uvicorn.Config(app, loop=args.loop, log_level="warning", access_log=False,
                            lifespan="off", ws_per_message_deflate=False)
    Server(config, line).run(sockets=[sock])


if __name__ == "__main__":
    main()
