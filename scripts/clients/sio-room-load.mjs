// sio-room-load: room broadcast load with the official socket.io-client v4
// (websocket transport), the same against any Socket.IO server or cluster
// that serves `join` and `broadcast-room` (knowngood's Socket.IO targets,
// scripts/node/sio-cluster-server.mjs).
//
//   node scripts/clients/sio-room-load.mjs --url http://A [--url http://B ...] \
//     [--sockets 1000] [--senders 10] [--rate 20] [--duration-ms 10000] \
//     [--room bench] [--payload 100] [--drain-ms 5000]
//
// Socket i connects to the (i mod number of URLs)-th URL and joins --room
// (waiting for the join's ack). Sockets 0 .. senders-1 then emit
// `broadcast-room` (room, payload) without an ack, --rate per second all
// together, evenly spread, for --duration-ms: every socket in the room,
// the sender included, should get each one once as a "broadcast" event.
// The payload carries the sender, a sequence number and the send time, so
// that every delivery gives a latency (one machine, one clock).
//
// stdout, one JSON line each:
//   {"msg":"start"}  when the window begins (every socket has joined)
//   {"msg":"end"}    when the last broadcast has been sent
//   then the result, once every delivery has arrived or --drain-ms passed:
//   {"client":"socket.io-client","version":..,"sockets":N,"connected":n,
//    "senders":K,"sent":s,"expected":s*n,"received":r,"lost":..,"duplicates":..,
//    "window_s":..,"deliveries_per_s":r/window_s,"p50_ms":..,"p99_ms":..,"max_ms":..,
//    "client_cpu_s":..}
// Exit status: 0 when it ran, 1 when the sockets could not all connect and
// join within 60 s, 2 on bad arguments.
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { io } from "socket.io-client";

const version = createRequire(import.meta.url)("socket.io-client/package.json").version;

function usage(msg) {
  console.error(`sio-room-load: ${msg}`);
  process.exit(2);
}

let values;
try {
  ({ values } = parseArgs({
    strict: true,
    options: {
      url: { type: "string", multiple: true },
      sockets: { type: "string", default: "1000" },
      senders: { type: "string", default: "10" },
      rate: { type: "string", default: "20" },
      "duration-ms": { type: "string", default: "10000" },
      "drain-ms": { type: "string", default: "5000" },
      room: { type: "string", default: "bench" },
      payload: { type: "string", default: "100" },
    },
  }));
} catch (err) {
  usage(err.message);
}
const int = (name, lo, hi) => {
  const v = Number(values[name]);
  if (!Number.isInteger(v) || v < lo || v > hi) usage(`--${name} ${values[name]}: want an integer ${lo}..${hi}`);
  return v;
};
if (!values.url?.length) usage("want --url (one or more)");
const N = int("sockets", 1, 100000);
const K = int("senders", 1, N);
const rate = int("rate", 1, 100000);
const durationMs = int("duration-ms", 100, 3600000);
const drainMs = int("drain-ms", 0, 60000);
const pad = "x".repeat(int("payload", 0, 1 << 20));
const room = values.room;

const out = (obj) => console.log(JSON.stringify(obj));
const now = () => performance.timeOrigin + performance.now();

// seen: per sender, per sequence number, how many sockets got it.
const seen = Array.from({ length: K }, () => new Map());
let received = 0;
let duplicates = 0;
const latencies = [];
let sent = 0;

const sockets = [];
function connect(i) {
  return new Promise((resolve, reject) => {
    const url = values.url[i % values.url.length];
    const socket = io(url, { transports: ["websocket"], reconnection: false, forceNew: true });
    const got = new Set(); // "sender:seq" this socket has seen
    socket.on("broadcast", (msg) => {
      if (!msg || typeof msg !== "object" || !(msg.s >= 0 && msg.s < K)) return;
      const key = msg.s * 1e9 + msg.n;
      if (got.has(key)) {
        duplicates++;
        return;
      }
      got.add(key);
      received++;
      latencies.push(now() - msg.t);
      const m = seen[msg.s];
      m.set(msg.n, (m.get(msg.n) ?? 0) + 1);
    });
    socket.on("connect_error", (err) => reject(new Error(`${url}: ${err.message}`)));
    socket.on("connect", async () => {
      try {
        await socket.timeout(30000).emitWithAck("join", room);
        resolve();
      } catch (err) {
        reject(new Error(`${url}: join: ${err.message}`));
      }
    });
    sockets.push(socket);
  });
}

const deadline = setTimeout(() => {
  console.error(`sio-room-load: ${N} sockets did not all connect and join within 60s`);
  process.exit(1);
}, 60000);
try {
  // Batches of 200: a thousand simultaneous upgrades measure the accept
  // queue, not the broadcast.
  for (let i = 0; i < N; i += 200) {
    await Promise.all(Array.from({ length: Math.min(200, N - i) }, (_, j) => connect(i + j)));
  }
} catch (err) {
  console.error(`sio-room-load: ${err.message}`);
  process.exit(1);
}
clearTimeout(deadline);

const cpu0 = process.cpuUsage();
out({ msg: "start" });
const t0 = now();
// One timer paces every sender: broadcast k goes out at t0 + k/rate, from
// sender k mod K, so the rate holds even when a tick comes late.
const total = Math.floor((rate * durationMs) / 1000);
const seqs = new Array(K).fill(0);
await new Promise((resolve) => {
  const tick = () => {
    const due = Math.min(total, Math.floor(((now() - t0) * rate) / 1000) + 1);
    while (sent < due) {
      const s = sent % K;
      sockets[s].emit("broadcast-room", room, { s, n: seqs[s]++, t: now(), pad });
      sent++;
    }
    if (sent >= total) return resolve();
    setTimeout(tick, Math.max(1, Math.min(10, 1000 / rate)));
  };
  tick();
});
const windowS = (now() - t0) / 1000;
out({ msg: "end" });

const expected = sent * N;
await new Promise((resolve) => {
  const end = now() + drainMs;
  const check = () => (received >= expected || now() >= end ? resolve() : setTimeout(check, 20));
  check();
});
const cpu = process.cpuUsage(cpu0);

latencies.sort((a, b) => a - b);
const pct = (p) => (latencies.length ? Math.round(latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)] * 1000) / 1000 : null);
out({
  client: "socket.io-client",
  version,
  sockets: N,
  connected: sockets.filter((s) => s.connected).length,
  senders: K,
  rate,
  sent,
  expected,
  received,
  lost: Math.max(0, expected - received),
  duplicates,
  window_s: windowS,
  deliveries_per_s: received / windowS,
  p50_ms: pct(50),
  p99_ms: pct(99),
  max_ms: latencies.length ? latencies.at(-1) : null,
  client_cpu_s: (cpu.user + cpu.system) / 1e6,
});
for (const s of sockets) s.close();
process.exit(0);
