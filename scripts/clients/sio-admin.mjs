// sio-admin: a server's /admin namespace as the Socket.IO Admin UI
// (@socket.io/admin-ui 0.5.1) speaks to it, with the official
// socket.io-client v4: what a server instrumented with
// instrument(io, {auth: false}), or a knowngood target started with
// -admin-ui, sends it, and its orders (servers/adminui_e2e_test.go).
//
//   node scripts/clients/sio-admin.mjs --url http://127.0.0.1:8080 \
//     [--path /socket.io/] [--transports websocket|polling|polling,websocket]
//
// It connects as the UI does (namespace /admin, auth {}, no reconnection)
// and prints one JSON line per event it gets, {"event":NAME,"args":[...]},
// first {"event":"connect","args":[SOCKET_ID]}, and at the end
// {"event":"disconnect","args":[REASON]}. Each JSON line on its standard
// input, {"emit":NAME,"args":[...]}, is emitted, as the UI emits its
// orders (_disconnect, join, leave, emit). It exits when its standard
// input ends (0), when the connection fails (1: {"event":"connect_error",
// "args":[MESSAGE]}), or on bad arguments (2).
import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import { flags } from "./flags.mjs";

const TRANSPORTS = { websocket: ["websocket"], polling: ["polling"], "polling,websocket": ["polling", "websocket"] };

const { values, usage } = flags("sio-admin", process.argv.slice(2), {
  url: { type: "string" },
  path: { type: "string", default: "/socket.io/" },
  transports: { type: "string", default: "polling,websocket" },
});
if (values.url === undefined || !/^https?:\/\//.test(values.url)) usage(`bad --url ${JSON.stringify(values.url)}: want http://HOST:PORT`);
const transports = TRANSPORTS[values.transports];
if (!transports) usage(`bad --transports ${JSON.stringify(values.transports)}: want ${Object.keys(TRANSPORTS).join(", ")}`);

const { io } = createRequire(import.meta.url)("socket.io-client");
const out = (event, args) => console.log(JSON.stringify({ event, args }));

const socket = io(values.url.replace(/\/$/, "") + "/admin", {
  path: values.path,
  transports,
  forceNew: true,
  reconnection: false,
  withCredentials: true,
  auth: {},
});
socket.on("connect", () => out("connect", [socket.id]));
socket.on("connect_error", (err) => {
  out("connect_error", [err.message]);
  process.exit(1);
});
socket.on("disconnect", (reason) => out("disconnect", [reason]));
socket.onAny((event, ...args) => out(event, args));

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (line.trim() === "") return;
  const order = JSON.parse(line);
  socket.emit(order.emit, ...(order.args ?? []));
});
lines.on("close", () => {
  socket.close();
  process.exit(0);
});
