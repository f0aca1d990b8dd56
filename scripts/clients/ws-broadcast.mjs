// ws-broadcast: check a target that speaks the websocket-shootout
// echo/broadcast protocol with the `ws` package, and report as one JSON
// line on stdout.
//
//   node scripts/clients/ws-broadcast.mjs --url ws://127.0.0.1:8080/ \
//     [--clients 50] [--broadcasts 20] [--push] [--timeout-ms 10000]
//
// --clients connections join (each is in once its echo comes back); the
// first sends --broadcasts broadcasts, one after the other, each once the
// last one's broadcastResult came. Every client must get every broadcast
// exactly once, in order, and every listenerCount must be --clients. With
// --push, every client must also see the server's timed push in seq order
// with no gap. Then a malformed message and an unknown type must each get
// an error message, and the connection must go on.
//
// Output (one line):
//   {"client":"ws","version":"8.x.y","clients":n,"broadcasts":n,
//    "cases":{"joined":"ok","broadcasts":"ok","listener_count":"ok","push":"ok","errors":"ok"},
//    "messages_sent":n}
// A case is "ok" or the reason it failed; messages_sent counts every message
// the clients sent, for a comparison with the server's /stats.
// Exit status: 0 when it ran (the cases tell the result), 2 on bad arguments.
import { createRequire } from "node:module";
import { flags, wsURL } from "./flags.mjs";
import WebSocket from "ws";

const version = createRequire(import.meta.url)("ws/package.json").version;

function parse(argv) {
  const { values, usage, intFlag } = flags("ws-broadcast", argv, {
    url: { type: "string" },
    clients: { type: "string", default: "50" },
    broadcasts: { type: "string", default: "20" },
    "timeout-ms": { type: "string", default: "10000" },
    push: { type: "boolean", default: false },
  });
  return {
    url: wsURL(values, usage),
    clients: intFlag("clients", 10000),
    broadcasts: intFlag("broadcasts", 100000),
    timeoutMs: intFlag("timeout-ms", 600000),
    push: values.push,
  };
}

// A client's record of what it received.
function connect(url) {
  const c = { ws: new WebSocket(url), broadcasts: [], results: [], pushes: [], other: [], waiters: [] };
  c.ws.on("message", (data) => {
    let m;
    try {
      m = JSON.parse(data.toString());
    } catch {
      m = { type: "unparsable" };
    }
    if (m.type === "broadcast") c.broadcasts.push(m.payload);
    else if (m.type === "broadcastResult") c.results.push(m);
    else if (m.type === "push") c.pushes.push(m.seq);
    else c.other.push(m);
    for (const w of c.waiters.splice(0)) w();
  });
  return c;
}

// until resolves once cond() holds, or rejects after ms.
function until(c, cond, ms, what) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
    const check = () => {
      if (cond()) {
        clearTimeout(timer);
        resolve();
      } else c.waiters.push(check);
    };
    check();
  });
}

async function main() {
  const cfg = parse(process.argv.slice(2));
  const cases = {};
  let sent = 0;
  const send = (c, obj) => {
    c.ws.send(typeof obj === "string" ? obj : JSON.stringify(obj));
    sent++;
  };
  const clients = [];
  try {
    for (let i = 0; i < cfg.clients; i++) clients.push(connect(cfg.url));
    await Promise.all(clients.map((c) => new Promise((resolve, reject) => {
      c.ws.once("open", resolve);
      c.ws.once("error", reject);
    })));
    for (const c of clients) send(c, { type: "echo", payload: "join" });
    await Promise.all(clients.map((c) => until(c, () => c.other.some((m) => m.type === "echo"), cfg.timeoutMs, "the join echo")));
    cases.joined = "ok";
  } catch (err) {
    cases.joined = err.message;
  }

  if (cases.joined === "ok") {
    const sender = clients[0];
    try {
      for (let k = 0; k < cfg.broadcasts; k++) {
        send(sender, { type: "broadcast", payload: { k } });
        await until(sender, () => sender.results.length > k, cfg.timeoutMs, `broadcastResult ${k}`);
      }
      await Promise.all(clients.map((c) => until(c, () => c.broadcasts.length >= cfg.broadcasts, cfg.timeoutMs, "every broadcast")));
      const bad = clients.findIndex((c) => c.broadcasts.length !== cfg.broadcasts || c.broadcasts.some((p, k) => p.k !== k));
      cases.broadcasts = bad < 0 ? "ok" : `client ${bad} got ${JSON.stringify(clients[bad].broadcasts.map((p) => p.k))}`;
      const wrong = sender.results.filter((r) => r.listenerCount !== cfg.clients);
      cases.listener_count = wrong.length === 0 ? "ok" : `${wrong.length} results with listenerCount ${wrong[0].listenerCount}, want ${cfg.clients}`;
    } catch (err) {
      cases.broadcasts = err.message;
    }

    if (cfg.push) {
      try {
        await Promise.all(clients.map((c) => until(c, () => c.pushes.length >= 3, cfg.timeoutMs, "three pushes")));
        const gap = clients.findIndex((c) => c.pushes.some((s, j) => j > 0 && s !== c.pushes[j - 1] + 1));
        cases.push = gap < 0 ? "ok" : `client ${gap} saw seqs ${clients[gap].pushes.join(",")}`;
      } catch (err) {
        cases.push = err.message;
      }
    }

    try {
      const c = clients[clients.length - 1];
      const before = c.other.length;
      send(c, "{not json");
      send(c, { type: "subscribe" });
      send(c, { type: "echo", payload: "after" });
      await until(c, () => c.other.length >= before + 3, cfg.timeoutMs, "the answers to bad messages");
      const got = c.other.slice(before);
      cases.errors = got[0].type === "error" && got[1].type === "error" && got[2].type === "echo" && got[2].payload === "after"
        ? "ok" : `answers ${JSON.stringify(got)}`;
    } catch (err) {
      cases.errors = err.message;
    }
  }

  await Promise.all(clients.map((c) => new Promise((resolve) => {
    if (c.ws.readyState === WebSocket.CLOSED) return resolve();
    c.ws.once("close", resolve);
    c.ws.close(1000);
  })));
  console.log(JSON.stringify({ client: "ws", version, clients: cfg.clients, broadcasts: cfg.broadcasts, cases, messages_sent: sent }));
}

main().catch((err) => {
  console.error(`ws-broadcast: ${err.stack || err}`);
  process.exit(1);
});
