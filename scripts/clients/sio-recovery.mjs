// Connection state recovery seen by the official socket.io-client v4: one
// socket listens for a target's timed push, loses its transport, comes
// back, and reports, as one JSON line, whether it was recovered (its
// socket.recovered, the same id) and whether any push went missing or
// came twice across the gap (each push's seq, per room).
//
//   node scripts/clients/sio-recovery.mjs --url http://127.0.0.1:8080 \
//     [--path /socket.io/] [--transports websocket] [--room push-1] [--event tick] \
//     [--before 3] [--after 3] [--drop client|server] [--admin http://127.0.0.1:9090] \
//     [--reconnect-ms 100] [--timeout-ms 20000]
//
// --drop client closes the transport from here (socket.io.engine.close(),
// as Socket.IO's docs test recovery); --drop server asks the target to
// close it (knowngood's POST /control/drop?how=transport on --admin).
// The client reconnects after --reconnect-ms, without jitter.
import { io } from "socket.io-client";

import { flags } from "./flags.mjs";

function parse(argv) {
  const { values, usage, intFlag } = flags("sio-recovery", argv, {
    url: { type: "string" },
    path: { type: "string", default: "/socket.io/" },
    transports: { type: "string", default: "websocket" },
    room: { type: "string", default: "" },
    event: { type: "string", default: "tick" },
    before: { type: "string", default: "3" },
    after: { type: "string", default: "3" },
    drop: { type: "string", default: "client" },
    admin: { type: "string", default: "" },
    "reconnect-ms": { type: "string", default: "100" },
    "timeout-ms": { type: "string", default: "20000" },
  });
  if (values.url === undefined || !/^https?:\/\//.test(values.url)) {
    usage(`bad --url ${JSON.stringify(values.url)}: want http://HOST:PORT`);
  }
  if (values.drop !== "client" && values.drop !== "server") usage(`bad --drop ${JSON.stringify(values.drop)}: want client or server`);
  if (values.drop === "server" && !/^https?:\/\//.test(values.admin)) usage(`--drop server needs --admin http://HOST:PORT`);
  return {
    url: values.url, path: values.path, transports: values.transports.split(","), room: values.room, event: values.event,
    before: intFlag("before", 1000), after: intFlag("after", 1000), drop: values.drop, admin: values.admin,
    reconnectMs: intFlag("reconnect-ms", 60000), timeoutMs: intFlag("timeout-ms", 600000),
  };
}

const opts = parse(process.argv.slice(2));
const report = { connects: 0, ids: [], recovered: false, received: 0, missed: 0, duplicates: 0, withOffset: 0, timedOut: false };
const s = io(opts.url, {
  path: opts.path, transports: opts.transports, forceNew: true,
  reconnectionDelay: opts.reconnectMs, reconnectionDelayMax: opts.reconnectMs, randomizationFactor: 0,
});
const last = {}; // seq of the last push, by room
let afterDrop = -1; // pushes seen since the reconnect; -1 before it

const finish = (code) => {
  s.close();
  console.log(JSON.stringify(report));
  process.exit(code);
};
setTimeout(() => {
  report.timedOut = true;
  finish(1);
}, opts.timeoutMs).unref();

s.on("connect", () => {
  report.connects++;
  report.ids.push(s.id);
  if (report.connects === 1) {
    if (opts.room !== "") s.emit("join", opts.room);
    return;
  }
  // A recovered socket is back in its rooms; a new one joins again, as
  // an application does when socket.recovered is false.
  report.recovered = s.recovered;
  if (!s.recovered && opts.room !== "") s.emit("join", opts.room);
  afterDrop = 0;
});

s.on(opts.event, (push, ...rest) => {
  // With recovery on, the server appends the event's offset (a string).
  if (typeof rest.at(-1) === "string") report.withOffset++;
  report.received++;
  const room = push.room ?? "";
  if (last[room] !== undefined) {
    if (push.seq <= last[room]) report.duplicates++;
    else report.missed += push.seq - last[room] - 1;
  }
  last[room] = Math.max(last[room] ?? 0, push.seq);
  if (afterDrop >= 0) {
    if (++afterDrop >= opts.after) finish(0);
    return;
  }
  if (report.connects === 1 && report.received === opts.before) drop();
});

function drop() {
  if (opts.drop === "client") {
    s.io.engine.close();
    return;
  }
  fetch(`${opts.admin}/control/drop?fraction=1&how=transport`, { method: "POST" }).then(async (res) => {
    if (!res.ok) {
      console.error(`sio-recovery: POST /control/drop: ${res.status} ${await res.text()}`);
      finish(1);
    }
  });
}
