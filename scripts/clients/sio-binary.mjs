// sio-binary: binary events and acks with the official socket.io-client v4
// (Buffers in the arguments travel as attachments: binary frames over
// WebSocket, base64 over polling), against a knowngood Socket.IO target.
//
//   node scripts/clients/sio-binary.mjs --url http://127.0.0.1:8080 \
//     --transports websocket|polling|polling,websocket
//
// Output (one line): {"client":"socket.io-client","version":"4.x.y",
//   "cases":{"echo ack":"ok","message-back":"ok","broadcast":"ok"}}
// A case that failed says how instead of "ok". Exit status: 0 when it ran,
// 2 on bad arguments.
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import { io } from "socket.io-client";

const version = createRequire(import.meta.url)("socket.io-client/package.json").version;
const TRANSPORTS = { websocket: ["websocket"], polling: ["polling"], "polling,websocket": ["polling", "websocket"] };

const { values } = parseArgs({ options: { url: { type: "string" }, transports: { type: "string", default: "websocket" } } });
if (!values.url || !TRANSPORTS[values.transports]) {
  console.error("sio-binary: want --url http://HOST:PORT and --transports websocket, polling or polling,websocket");
  process.exit(2);
}

const first = Buffer.from([0x30, 1, 2, 0xff]); // starts with "0", as a CONNECT packet does
const second = Buffer.alloc(3000, 7);

// same reports whether args came back as [first, {nested: [second]}, "text"].
function same(args) {
  const [a, b, c] = args;
  return Buffer.from(a).equals(first) && Buffer.from(b?.nested?.[0] ?? []).equals(second) && c === "text";
}

function withTimeout(promise, what) {
  // unref: a timer left over does not keep the process alive.
  return Promise.race([promise, new Promise((resolve) => setTimeout(() => resolve(`no ${what} within 5 s`), 5000).unref())]);
}

const socket = io(values.url, { transports: TRANSPORTS[values.transports], reconnection: false, forceNew: true });
const cases = {};
const connected = await withTimeout(new Promise((resolve) => {
  socket.on("connect", () => resolve("ok"));
  socket.on("connect_error", (err) => resolve(`connect_error: ${err.message}`));
}), "connect");
if (connected !== "ok") {
  cases.connect = connected;
} else {
  if (values.transports === "polling,websocket") {
    const engine = socket.io.engine;
    cases.upgrade = await withTimeout(new Promise((resolve) => {
      if (engine.transport.name === "websocket") resolve("ok");
      else engine.once("upgrade", () => resolve("ok"));
    }), "upgrade");
  }
  const args = [first, { nested: [second] }, "text"];
  cases["echo ack"] = await withTimeout(new Promise((resolve) => {
    socket.emit("echo", ...args, (...got) => resolve(same(got) ? "ok" : `ack ${JSON.stringify(got)}`));
  }), "ack");
  cases["message-back"] = await withTimeout(new Promise((resolve) => {
    socket.once("message-back", (...got) => resolve(same(got) ? "ok" : `event ${JSON.stringify(got)}`));
    socket.emit("message", ...args);
  }), "message-back");
  cases.broadcast = await withTimeout(new Promise((resolve) => {
    socket.once("broadcast", (...got) => resolve(same(got) ? "ok" : `event ${JSON.stringify(got)}`));
    socket.emit("broadcast", ...args);
  }), "broadcast");
}
socket.close();
console.log(JSON.stringify({ client: "socket.io-client", version, cases }));
