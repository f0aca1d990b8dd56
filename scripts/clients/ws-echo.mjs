// ws-echo: run knowngood's echo cases against a WebSocket
// echo target with the `ws` package, and report each case as one JSON line
// on stdout.
//
//   node scripts/clients/ws-echo.mjs --url ws://127.0.0.1:8080/ \
//     [--max-message 1048576] [--bad] [--compression] [--timeout-ms 10000] [--insecure]
//
// On one connection: text, binary, empty text, empty binary, a fragmented
// text message (three frames), a 1 MiB binary message, a ping (the pong must
// carry its payload), then a close with 1000 (the server must answer 1000).
// With --bad, each on a connection of its own: a binary message of
// --max-message + 1 bytes (the server must close with 1009) and a text
// message that is not UTF-8 (1007).
//
// Output (one line):
//   {"client":"ws","version":"8.x.y","cases":{"text":"ok",...},
//    "connections":n,"messages":n,"bytes":n}
// A case is "ok" or the reason it failed. messages and bytes are what the
// echo cases sent (a fragmented message is one message), so that a test can
// compare them with the server's /stats.
// --insecure accepts any server certificate over wss (a self-signed pair
// in a test), whatever NODE_TLS_REJECT_UNAUTHORIZED says.
// Exit status: 0 when it ran (the cases tell the result), 2 on bad arguments.
import { createRequire } from "node:module";
import { flags, wsURL } from "./flags.mjs";
import WebSocket from "ws";

const version = createRequire(import.meta.url)("ws/package.json").version;

function parse(argv) {
  const { values, usage, intFlag } = flags("ws-echo", argv, {
    url: { type: "string" },
    "max-message": { type: "string", default: "1048576" },
    "timeout-ms": { type: "string", default: "10000" },
    bad: { type: "boolean", default: false },
    compression: { type: "boolean", default: false },
    insecure: { type: "boolean", default: false },
  });
  return {
    url: wsURL(values, usage),
    maxMessage: intFlag("max-message", 1 << 30),
    timeoutMs: intFlag("timeout-ms", 3600000),
    bad: values.bad,
    compression: values.compression,
    insecure: values.insecure,
  };
}

// Conn wraps a ws client: next() waits for the next message or pong, closed
// for the close event.
class Conn {
  static open(opts) {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(opts.url, {
        perMessageDeflate: opts.compression,
        handshakeTimeout: opts.timeoutMs,
        rejectUnauthorized: !opts.insecure,
      });
      const conn = new Conn(ws, opts.timeoutMs);
      ws.once("open", () => resolve(conn));
      ws.once("error", reject);
    });
  }

  constructor(ws, timeoutMs) {
    this.ws = ws;
    this.timeoutMs = timeoutMs;
    this.inbox = [];
    this.waiting = null;
    const deliver = (event) => {
      if (this.waiting) {
        const w = this.waiting;
        this.waiting = null;
        w(event);
      } else {
        this.inbox.push(event);
      }
    };
    ws.on("message", (data, isBinary) => deliver({ kind: "message", data, isBinary }));
    ws.on("pong", (data) => deliver({ kind: "pong", data }));
    ws.on("error", () => {}); // the close event tells the story
    this.closed = new Promise((resolve) => ws.once("close", (code, reason) => resolve({ code, reason: reason.toString() })));
    this.closed.then((c) => deliver({ kind: "close", ...c }));
  }

  next() {
    if (this.inbox.length > 0) return Promise.resolve(this.inbox.shift());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = null;
        reject(new Error(`nothing came within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      this.waiting = (event) => {
        clearTimeout(timer);
        resolve(event);
      };
    });
  }

  // closeCode waits for the connection to close and returns the server's code.
  async closeCode() {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`not closed within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      return (await Promise.race([this.closed, timeout])).code;
    } finally {
      clearTimeout(timer);
    }
  }
}

async function expectEcho(conn, payload, isBinary) {
  const got = await conn.next();
  if (got.kind !== "message") throw new Error(`got a ${got.kind} (${got.code ?? ""}), want the echo`);
  if (got.isBinary !== isBinary) throw new Error(`got ${got.isBinary ? "binary" : "text"}, want ${isBinary ? "binary" : "text"}`);
  if (!Buffer.from(got.data).equals(Buffer.from(payload))) {
    throw new Error(`got ${got.data.length} bytes, want ${Buffer.from(payload).length}`);
  }
}

async function main() {
  const opts = parse(process.argv.slice(2));
  const cases = {};
  let connections = 0;
  let messages = 0;
  let bytes = 0;
  const run = async (name, fn) => {
    try {
      await fn();
      cases[name] = "ok";
    } catch (err) {
      cases[name] = err?.message || String(err);
    }
  };
  const echo = async (conn, payload, isBinary) => {
    conn.ws.send(payload, { binary: isBinary });
    messages++;
    bytes += Buffer.byteLength(payload);
    await expectEcho(conn, payload, isBinary);
  };

  let conn;
  await run("connect", async () => {
    conn = await Conn.open(opts);
    connections++;
  });
  if (conn) {
    await run("text", () => echo(conn, "hello, wörld", false));
    await run("binary", () => echo(conn, Buffer.from([0, 1, 0xfe, 0xff]), true));
    await run("empty text", () => echo(conn, "", false));
    await run("empty binary", () => echo(conn, Buffer.alloc(0), true));
    await run("fragmented", async () => {
      const parts = ["frag", "men", "ted"];
      parts.forEach((p, i) => conn.ws.send(p, { binary: false, fin: i === parts.length - 1 }));
      messages++;
      bytes += parts.join("").length;
      await expectEcho(conn, parts.join(""), false);
    });
    await run("1 MiB", () => echo(conn, Buffer.alloc(1 << 20, "k"), true));
    await run("ping", async () => {
      conn.ws.ping(Buffer.from("ping-1"));
      const got = await conn.next();
      if (got.kind !== "pong" || got.data.toString() !== "ping-1") throw new Error(`got a ${got.kind} ${got.data ?? ""}, want pong ping-1`);
    });
    await run("close", async () => {
      conn.ws.close(1000);
      const code = await conn.closeCode();
      if (code !== 1000) throw new Error(`server closed with ${code}, want 1000`);
    });
  }

  if (opts.bad) {
    const bad = async (name, send, want) =>
      run(name, async () => {
        const c = await Conn.open(opts);
        connections++;
        send(c.ws);
        const code = await c.closeCode();
        if (code !== want) throw new Error(`server closed with ${code}, want ${want}`);
      });
    await bad("oversize", (ws) => ws.send(Buffer.alloc(opts.maxMessage + 1, "o"), { binary: true }), 1009);
    // ws sends a Buffer as text without checking it.
    await bad("invalid UTF-8", (ws) => ws.send(Buffer.from([0x68, 0xff, 0xfe]), { binary: false }), 1007);
  }

  console.log(JSON.stringify({ client: "ws", version, cases, connections, messages, bytes }));
}

main().catch((err) => {
  console.error(`ws-echo: ${err?.stack || err}`);
  process.exit(1);
});
