#!/usr/bin/python3
"""ws_echo: run knowngood's echo cases against a WebSocket
echo target with the `websockets` package, and report each case as one JSON
line on stdout.

    /usr/bin/python3 scripts/clients/ws_echo.py --url ws://127.0.0.1:8080/ \
        [--max-message 1048576] [--bad] [--compression] [--timeout-ms 10000]

Run it with Debian's /usr/bin/python3 (python3-websockets 10.4): the python3
first on PATH may not see that package.

The cases and the output are those of scripts/clients/ws-echo.mjs. On one
connection: text, binary, empty text, empty binary, a fragmented text
message (three frames), a 1 MiB binary message, a ping (the pong must carry
its payload), then a close with 1000 (the server must answer 1000). With
--bad, on a connection of its own: a binary message of --max-message + 1
bytes (the server must close with 1009).
    {"client":"websockets","version":"10.4","cases":{"text":"ok",...},
     "connections":n,"messages":n,"bytes":n}
Exit status: 0 when it ran (the cases tell the result), 2 on bad arguments.
"""

import ssl
import asyncio
import json
import sys

import websockets

from cliflags import ArgumentParser, positive_int


def parse_args(argv):
    p = ArgumentParser(prog="ws_echo", allow_abbrev=False)
    p.add_argument("--url", required=True)
    p.add_argument("--max-message", type=positive_int(1 << 30), default=1 << 20)
    p.add_argument("--timeout-ms", type=positive_int(3600000), default=10000)
    p.add_argument("--bad", action="store_true")
    p.add_argument("--compression", action="store_true")
    p.add_argument("--insecure", action="store_true", help="wss: accept any certificate (a self-signed test pair)")
    args = p.parse_args(argv)
    if not args.url.startswith(("ws://", "wss://")):
        p.error(f"argument --url: bad value {args.url!r}: want ws://HOST:PORT/PATH")
    return args


class Report:
    def __init__(self):
        self.cases = {}
        self.connections = 0
        self.messages = 0
        self.bytes = 0

    async def run(self, name, coro):
        try:
            await coro
            self.cases[name] = "ok"
        except Exception as exc:  # noqa: BLE001: the message is the report
            self.cases[name] = f"{type(exc).__name__}: {exc}"


def connect(args):
    return websockets.connect(
        args.url,
        max_size=None,
        compression="deflate" if args.compression else None,
        open_timeout=args.timeout_ms / 1000,
        close_timeout=args.timeout_ms / 1000,
        ping_interval=None,
        ssl=insecure_context() if args.insecure and args.url.startswith("wss:") else None,
    )


def insecure_context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


async def run(args):
    timeout = args.timeout_ms / 1000
    report = Report()

    async def echo(ws, message, sent=None):
        await ws.send(message)
        data = sent if sent is not None else message
        report.messages += 1
        report.bytes += len(data.encode() if isinstance(data, str) else data)
        got = await asyncio.wait_for(ws.recv(), timeout)
        if type(got) is not type(data) or got != data:
            raise AssertionError(f"got {type(got).__name__} of {len(got)}, want {type(data).__name__} of {len(data)}")

    async def ping(ws):
        pong = await ws.ping(b"ping-1")
        await asyncio.wait_for(pong, timeout)

    async def close(ws):
        await ws.close(code=1000)
        if ws.close_code != 1000:
            raise AssertionError(f"server closed with {ws.close_code}, want 1000")

    ws = None
    try:
        ws = await connect(args)
        report.connections += 1
        report.cases["connect"] = "ok"
    except Exception as exc:  # noqa: BLE001
        report.cases["connect"] = f"{type(exc).__name__}: {exc}"
    if ws is not None:
        await report.run("text", echo(ws, "hello, wörld"))
        await report.run("binary", echo(ws, bytes([0, 1, 0xFE, 0xFF])))
        await report.run("empty text", echo(ws, ""))
        await report.run("empty binary", echo(ws, b""))
        # An iterable is sent as a fragmented message, one frame per item.
        await report.run("fragmented", echo(ws, ["frag", "men", "ted"], sent="fragmented"))
        await report.run("1 MiB", echo(ws, b"p" * (1 << 20)))
        await report.run("ping", ping(ws))
        await report.run("close", close(ws))

    if args.bad:

        async def oversize():
            async with connect(args) as ws:
                report.connections += 1
                await ws.send(b"o" * (args.max_message + 1))
                try:
                    await asyncio.wait_for(ws.recv(), timeout)
                except websockets.ConnectionClosed as exc:
                    code = exc.rcvd.code if exc.rcvd else None
                    if code != 1009:
                        raise AssertionError(f"server closed with {code}, want 1009") from exc
                    return
                raise AssertionError("the oversized message came back")

        await report.run("oversize", oversize())

    return report


def main():
    args = parse_args(sys.argv[1:])
    report = asyncio.run(run(args))
    print(
        json.dumps(
            {
                "client": "websockets",
                "version": websockets.version.version,
                "cases": report.cases,
                "connections": report.connections,
                "messages": report.messages,
                "bytes": report.bytes,
            }
        )
    )


if __name__ == "__main__":
    main()
