// sio-echoers: K Socket.IO clients, connected before a run, that call
// `echo` every --every-ms and time each round trip: what an already
// connected user sees while the server is busy (a burst of connects
// holding its loop). The official socket.io-client v4, over WebSocket.
//
//   node scripts/clients/sio-echoers.mjs --url http://127.0.0.1:8080 [--n 3] [--every-ms 100] [--deadline-ms 60000]
//
// Once every client has connected it prints {"ready":true} on stdout; it
// then echoes until its standard input ends (or --deadline-ms passes) and
// prints one JSON line:
//   {"client":"socket.io-client","version":"4.x.y","echoers":K,"calls":n,
//    "acked":n,"p50_rtt_ms":..,"max_rtt_ms":..,"pending_max_ms":..}
// max_rtt_ms is the longest round trip that completed; pending_max_ms the
// age of the oldest call still unanswered at the end (0 when none was).
// A client whose connect fails within 10 s makes it exit 1; bad arguments
// exit 2.
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { flags } from "./flags.mjs";

const { values, usage, intFlag } = flags("sio-echoers", process.argv.slice(2), {
  url: { type: "string" },
  n: { type: "string", default: "3" },
  "every-ms": { type: "string", default: "100" },
  "deadline-ms": { type: "string", default: "60000" },
});
if (values.url === undefined || !/^https?:\/\//.test(values.url)) usage(`bad --url ${JSON.stringify(values.url)}: want http://HOST:PORT`);
const n = intFlag("n", 1000);
const every = intFlag("every-ms", 3600000);
const deadline = intFlag("deadline-ms", 3600000);

const require = createRequire(import.meta.url);
const { io } = require("socket.io-client");
const version = require("socket.io-client/package.json").version;

const sockets = [];
for (let i = 0; i < n; i++) {
  sockets.push(io(values.url, { transports: ["websocket"], forceNew: true, reconnection: false, timeout: 10000 }));
}
try {
  await Promise.all(sockets.map((s) => new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("connect: no answer in 10 s")), 10000);
    s.once("connect", () => { clearTimeout(t); resolve(); });
    s.once("connect_error", (err) => { clearTimeout(t); reject(err); });
  })));
} catch (err) {
  console.error(`sio-echoers: ${err.message}`);
  for (const s of sockets) s.close();
  process.exit(1);
}
console.log(JSON.stringify({ ready: true }));

const rtts = [];
const pending = new Set();
let calls = 0;
const timer = setInterval(() => {
  for (const s of sockets) {
    const sent = performance.now();
    pending.add(sent);
    calls++;
    s.emit("echo", calls, () => {
      pending.delete(sent);
      rtts.push(performance.now() - sent);
    });
  }
}, every);

const finish = () => {
  clearInterval(timer);
  const now = performance.now();
  const oldest = pending.size ? Math.min(...pending) : now;
  rtts.sort((a, b) => a - b);
  const round = (v) => (v === undefined ? null : Math.round(v * 1000) / 1000);
  console.log(JSON.stringify({
    client: "socket.io-client", version, echoers: n, calls, acked: rtts.length,
    p50_rtt_ms: round(rtts[Math.max(0, Math.ceil(rtts.length / 2) - 1)]),
    max_rtt_ms: round(rtts.at(-1)), pending_max_ms: round(now - oldest),
  }));
  for (const s of sockets) s.close();
  process.exit(0);
};
process.stdin.on("end", finish);
process.stdin.resume();
setTimeout(finish, deadline);
