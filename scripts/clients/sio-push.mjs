// Listen for a Socket.IO target's timed push (-push-interval) with the
// official socket.io-client v4 and report, as one JSON line, what arrived:
// how many pushes, how many were missed (gaps in each room's seq) or came
// twice, and their latency from the server's sentAt to their arrival
// here; with --seqs, also each push's sentAt by seq (so that two clients
// on two replicas can tell whether they saw one numbering).
//
//   node scripts/clients/sio-push.mjs --url http://127.0.0.1:8080 \
//     [--n 10] [--event tick] [--room push-1] [--duration-ms 2000] [--path /socket.io/] [--seqs]
//
// The clock is the machine's: on one machine sentAt and the arrival share
// it; across machines their difference also holds the clocks' offset.
import { io } from "socket.io-client";

import { flags } from "./flags.mjs";

function parse(argv) {
  const { values, usage, intFlag } = flags("sio-push", argv, {
    url: { type: "string" },
    n: { type: "string", default: "10" },
    event: { type: "string", default: "tick" },
    room: { type: "string", default: "" },
    "duration-ms": { type: "string", default: "2000" },
    path: { type: "string", default: "/socket.io/" },
    seqs: { type: "boolean", default: false },
  });
  if (values.url === undefined || !/^https?:\/\//.test(values.url)) {
    usage(`bad --url ${JSON.stringify(values.url)}: want http://HOST:PORT`);
  }
  return { url: values.url, n: intFlag("n", 10000), event: values.event, room: values.room, durationMs: intFlag("duration-ms", 3600000), path: values.path, seqs: values.seqs };
}

const percentile = (sorted, p) => (sorted.length ? sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] : null);

async function main() {
  const opts = parse(process.argv.slice(2));
  const latencies = [];
  let received = 0;
  let missed = 0;
  let duplicates = 0;
  const seqs = {}; // sentAt by seq
  let connected = 0;
  const sockets = [];
  await Promise.all(
    Array.from({ length: opts.n }, () => new Promise((resolve) => {
      const s = io(opts.url, { path: opts.path, transports: ["websocket"], forceNew: true, reconnection: false });
      sockets.push(s);
      const last = {}; // seq of the last push, by room
      s.on(opts.event, (push) => {
        // Wall time in ms with a fraction, against sentAt in ns.
        const nowMs = performance.timeOrigin + performance.now();
        received++;
        latencies.push(nowMs - push.sentAt / 1e6);
        const room = push.room ?? "";
        if (last[room] !== undefined && push.seq > last[room] + 1) missed += push.seq - last[room] - 1;
        if (last[room] !== undefined && push.seq <= last[room]) duplicates++;
        last[room] = Math.max(last[room] ?? 0, push.seq);
        seqs[push.seq] = push.sentAt;
      });
      s.on("connect", () => {
        connected++;
        if (opts.room === "") return resolve();
        s.emit("join", opts.room, () => resolve());
      });
      s.on("connect_error", () => resolve());
    })),
  );
  await new Promise((r) => setTimeout(r, opts.durationMs));
  for (const s of sockets) s.close();
  latencies.sort((a, b) => a - b);
  const round = (v) => (v === null ? null : Math.round(v * 1000) / 1000);
  console.log(JSON.stringify({ connected, received, missed, duplicates, ...(opts.seqs ? { seqs } : {}), p50Ms: round(percentile(latencies, 50)), p99Ms: round(percentile(latencies, 99)), maxMs: round(latencies.at(-1) ?? null) }));
}

main();
