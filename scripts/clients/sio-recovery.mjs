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
//
// A push can come twice through the client itself: socket.io-client hands
// each decoded packet to its socket one timer tick later, but acts on a
// close at once, so a push read just before the transport closed reaches
// the socket after its disconnect. The socket holds it and delivers it on
// the next connect, first among what it buffered, and only then records
// its offset: the CONNECT it sent carried the offset before it, so the
// recovery sends that push again. Such a push is counted as held (the
// socket's receive buffer holds it when the reconnect starts; the pushes
// the recovery sends come before the server's CONNECT, into the same
// buffer, after it), and its second copy as heldTwice, not as a duplicate
// of the server's: against Node's socket.io the same client does the same.
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
const report = { connects: 0, ids: [], recovered: false, received: 0, missed: 0, duplicates: 0, held: 0, heldTwice: 0, withOffset: 0, timedOut: false };
const s = io(opts.url, {
  path: opts.path, transports: opts.transports, forceNew: true,
  reconnectionDelay: opts.reconnectMs, reconnectionDelayMax: opts.reconnectMs, randomizationFactor: 0,
});
const last = {}; // seq of the last push, by room
let afterDrop = -1; // pushes seen since the reconnect; -1 before it
let disconnected = false; // the first connection has ended
let heldLeft = 0; // pushes the socket holds from before the gap, not yet delivered
const held = new Set(); // room and seq of each push the socket held across the gap

s.io.on("reconnect_attempt", () => {
  heldLeft = s.receiveBuffer.length;
});

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

s.on("disconnect", () => {
  disconnected = true;
});

s.on(opts.event, (push, ...rest) => {
  // With recovery on, the server appends the event's offset (a string).
  if (typeof rest.at(-1) === "string") report.withOffset++;
  report.received++;
  const room = push.room ?? "";
  const key = `${room}/${push.seq}`;
  if (disconnected && report.connects === 1 && heldLeft > 0) {
    heldLeft--;
    report.held++;
    held.add(key);
  }
  if (last[room] !== undefined) {
    if (push.seq > last[room]) report.missed += push.seq - last[room] - 1;
    else if (held.has(key)) report.heldTwice++;
    else report.duplicates++;
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
