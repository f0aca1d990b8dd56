// sio-users: N user sockets of the official socket.io-client v4 that
// stay connected, some in rooms and some talking: something for the
// Socket.IO Admin UI to watch (servers/adminui_e2e_test.go).
//
//   node scripts/clients/sio-users.mjs --url http://127.0.0.1:8080 [--n 20] \
//     [--path /socket.io/] [--transports websocket|polling|polling,websocket] \
//     [--rooms 3] [--talkers 5] [--every-ms 200] [--namespace /]
//
// Socket i joins room "room-(i mod --rooms)" with the target's `join`
// event (its ack awaited) when i < 2 x --rooms; sockets 0 .. talkers-1
// emit "chat:message" {"from": i, "seq": n} every --every-ms, without an
// ack. Once every socket is connected and has joined, it prints
//   {"ready":true,"ids":[...],"rooms":{"ID":"room-0",...}}
// then one JSON line per event a socket gets ({"id":..,"event":..,"args":[..]})
// and per socket that disconnects ({"id":..,"disconnect":REASON}), until its
// standard input ends. Exit status: 0 when it ran, 1 when the sockets could
// not connect (and join) within 10 s, 2 on bad arguments.
import { createRequire } from "node:module";
import { flags } from "./flags.mjs";

const TRANSPORTS = { websocket: ["websocket"], polling: ["polling"], "polling,websocket": ["polling", "websocket"] };

const { values, usage, intFlag } = flags("sio-users", process.argv.slice(2), {
  url: { type: "string" },
  n: { type: "string", default: "20" },
  path: { type: "string", default: "/socket.io/" },
  transports: { type: "string", default: "websocket" },
  rooms: { type: "string", default: "3" },
  talkers: { type: "string", default: "5" },
  "every-ms": { type: "string", default: "200" },
  namespace: { type: "string", default: "/" },
});
if (values.url === undefined || !/^https?:\/\//.test(values.url)) usage(`bad --url ${JSON.stringify(values.url)}: want http://HOST:PORT`);
const transports = TRANSPORTS[values.transports];
if (!transports) usage(`bad --transports ${JSON.stringify(values.transports)}: want ${Object.keys(TRANSPORTS).join(", ")}`);
const n = intFlag("n", 10000);
const rooms = values.rooms === "0" ? 0 : intFlag("rooms", 1000);
const talkers = values.talkers === "0" ? 0 : intFlag("talkers", n);
const every = intFlag("every-ms", 3600000);

const { io } = createRequire(import.meta.url)("socket.io-client");
const out = (obj) => console.log(JSON.stringify(obj));

const url = values.url.replace(/\/$/, "") + (values.namespace === "/" ? "" : values.namespace);
const sockets = [];
for (let i = 0; i < n; i++) {
  sockets.push(io(url, { path: values.path, transports, forceNew: true, reconnection: false, timeout: 10000 }));
}
const timer = setTimeout(() => {
  console.error("sio-users: not every socket connected and joined within 10 s");
  process.exit(1);
}, 10000);

const joined = {};
await Promise.all(
  sockets.map(
    (s, i) =>
      new Promise((resolve, reject) => {
        s.once("connect_error", reject);
        s.once("connect", () => {
          if (rooms === 0 || i >= 2 * rooms) return resolve();
          const room = `room-${i % rooms}`;
          s.emit("join", room, () => {
            joined[s.id] = room;
            resolve();
          });
        });
      }),
  ),
).catch((err) => {
  console.error(`sio-users: ${err.message}`);
  process.exit(1);
});
clearTimeout(timer);

sockets.forEach((s) => {
  const id = s.id; // a socket has none once disconnected
  s.onAny((event, ...args) => out({ id, event, args }));
  s.on("disconnect", (reason) => out({ id, disconnect: reason }));
});
out({ ready: true, ids: sockets.map((s) => s.id), rooms: joined });

let seq = 0;
const talk = setInterval(() => {
  seq++;
  for (let i = 0; i < talkers; i++) {
    if (sockets[i].connected) sockets[i].emit("chat:message", { from: i, seq });
  }
}, every);

process.stdin.resume();
process.stdin.on("end", () => {
  clearInterval(talk);
  sockets.forEach((s) => s.close());
  process.exit(0);
});
