// Trigger a reconnection storm from a target's admin listener and watch
// the clients come back: connect --n clients, POST --drop (the target's
// /control/drop, which closes them), wait until each has reconnected, and
// print one JSON line: how many connected, were dropped, came back, and
// when (ms after the drop). The target's own account is at
// /control/storm.
//
//   node scripts/clients/reconnect-storm.mjs --url http://127.0.0.1:8080 \
//     --drop http://127.0.0.1:9100/control/drop [--client socket.io|ws] [--n 20] \
//     [--token TOKEN] [--timeout-ms 20000] [--expect-back N --wait-ms 2000]
//
// --client socket.io is the official socket.io-client v4 over WebSocket
// with its default reconnection (1 s delay, randomization 0.5, doubling up
// to 5 s): back-off with jitter. --client ws is Node's ws, reconnecting at
// once on every close, as a naive client does: a herd. --token is
// -admin-token, when the admin listener is not on loopback. It waits for
// every client to come back, or with --expect-back 0 (a drop with
// how=disconnect, after which socket.io-client stays away) --wait-ms, then
// reports how many did.
import { io } from "socket.io-client";
import WebSocket from "ws";

import { flags } from "./flags.mjs";

function parse(argv) {
  const { values, usage, intFlag } = flags("reconnect-storm", argv, {
    url: { type: "string" },
    drop: { type: "string" },
    client: { type: "string", default: "socket.io" },
    n: { type: "string", default: "20" },
    token: { type: "string", default: "" },
    "timeout-ms": { type: "string", default: "20000" },
    "expect-back": { type: "string" },
    "wait-ms": { type: "string", default: "2000" },
  });
  if (values.url === undefined || !/^(https?|wss?):\/\//.test(values.url)) {
    usage(`bad --url ${JSON.stringify(values.url)}: want http://HOST:PORT (socket.io) or ws://HOST:PORT/ (ws)`);
  }
  if (values.drop === undefined || !/^https?:\/\//.test(values.drop)) {
    usage(`bad --drop ${JSON.stringify(values.drop)}: want the admin listener's http://HOST:PORT/control/drop`);
  }
  if (values.client !== "socket.io" && values.client !== "ws") {
    usage(`bad --client ${JSON.stringify(values.client)}: want socket.io or ws`);
  }
  const n = intFlag("n", 10000);
  let expectBack = n;
  if (values["expect-back"] !== undefined) {
    expectBack = Number(values["expect-back"]);
    if (!/^[0-9]+$/.test(values["expect-back"]) || expectBack > n) usage(`bad --expect-back ${JSON.stringify(values["expect-back"])}: want an integer from 0 to --n`);
  }
  return { ...values, n, expectBack, waitMs: intFlag("wait-ms", 3600000), timeoutMs: intFlag("timeout-ms", 3600000) };
}

// A client is one connection that comes back on its own: onOpen runs on
// its first connect and every reconnect.
function socketIOClient(url, onOpen) {
  const s = io(url, { transports: ["websocket"], forceNew: true });
  s.on("connect", onOpen);
  return () => s.close();
}

function wsClient(url, onOpen) {
  let ws;
  let closing = false;
  const open = () => {
    ws = new WebSocket(url);
    ws.on("open", onOpen);
    ws.on("error", () => {});
    ws.on("close", () => { if (!closing) open(); });
  };
  open();
  return () => { closing = true; ws.terminate(); };
}

async function main() {
  const opts = parse(process.argv.slice(2));
  const client = opts.client === "ws" ? wsClient : socketIOClient;
  const url = opts.client === "ws" ? opts.url.replace(/^http/, "ws") : opts.url;
  let connected = 0;
  let droppedAt = 0;
  const back = []; // ms after the drop of each reconnect
  let allIn, allBack;
  const connectedAll = new Promise((resolve) => { allIn = resolve; });
  const backAll = new Promise((resolve) => { allBack = resolve; });
  const closers = [];
  for (let i = 0; i < opts.n; i++) {
    let first = true;
    closers.push(client(url, () => {
      if (first) {
        first = false;
        if (++connected === opts.n) allIn();
        return;
      }
      back.push(performance.now() - droppedAt);
      if (back.length === opts.expectBack) allBack();
    }));
  }
  const timeout = new Promise((resolve) => setTimeout(resolve, opts.timeoutMs, "timeout"));
  const result = { client: opts.client, connected: 0, dropped: 0, reconnected: 0, back_ms: [] };
  try {
    if ((await Promise.race([connectedAll, timeout])) === "timeout") throw new Error(`${connected} of ${opts.n} connected within ${opts.timeoutMs} ms`);
    result.connected = connected;
    droppedAt = performance.now();
    const headers = opts.token ? { Authorization: `Bearer ${opts.token}` } : {};
    const answer = await fetch(opts.drop, { method: "POST", headers });
    if (!answer.ok) throw new Error(`POST ${opts.drop}: ${answer.status} ${(await answer.text()).trim()}`);
    result.dropped = (await answer.json()).dropped;
    if (opts.expectBack === 0) await new Promise((resolve) => setTimeout(resolve, opts.waitMs));
    else if ((await Promise.race([backAll, timeout])) === "timeout") throw new Error(`${back.length} of ${opts.expectBack} came back within ${opts.timeoutMs} ms`);
  } catch (e) {
    result.error = e.message;
  }
  result.reconnected = back.length;
  result.back_ms = back.map((ms) => Math.round(ms));
  for (const close of closers) close();
  console.log(JSON.stringify(result));
  process.exit(result.error ? 1 : 0);
}

main();
