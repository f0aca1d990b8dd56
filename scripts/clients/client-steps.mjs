// client-steps: connections of a real client, driven one step at a time
// by commands on stdin, that print what happens to them on stdout: for a
// test that changes the server between steps (POST /control/fault) and
// looks at each connection after each change. --client ws is Node's ws;
// --client socket.io the official socket.io-client v4, without
// reconnection, its messages the `echo` event with an ack.
//
//   node scripts/clients/client-steps.mjs --client ws --url ws://127.0.0.1:8080/
//   node scripts/clients/client-steps.mjs --client socket.io --url http://127.0.0.1:8080 \
//     [--transports polling,websocket|websocket] [--timeout-ms 10000]
//
// Commands, one JSON object a line:
//   {"open":"a"}              open connection a
//   {"send":"a","data":"x"}   ws: send the text x; socket.io: emit echo x, with an ack
//   {"close":"a"}             close it from the client's side
// Events, one JSON object a line, each naming its connection:
//   {"conn":"a","event":"open"}
//   {"conn":"a","event":"refused","status":503,"message":"..."}   the handshake was refused
//                                    (status 0 when the client does not say it)
//   {"conn":"a","event":"message","data":"x"}   ws: a message; socket.io: an ack
//   {"conn":"a","event":"close","code":1011,"reason":"..."}   ws: the close code;
//                                    socket.io: code 0, reason the client's ("io server disconnect")
//   {"event":"error","message":"..."}   a bad command
// The connections close when stdin ends, and the script exits 0; bad
// arguments exit 2.
import { createInterface } from "node:readline";
import { io } from "socket.io-client";
import WebSocket from "ws";

import { flags } from "./flags.mjs";

function parse(argv) {
  const { values, usage, intFlag } = flags("client-steps", argv, {
    client: { type: "string", default: "ws" },
    url: { type: "string" },
    transports: { type: "string", default: "polling,websocket" },
    "timeout-ms": { type: "string", default: "10000" },
  });
  if (values.client !== "ws" && values.client !== "socket.io") {
    usage(`bad --client ${JSON.stringify(values.client)}: want ws or socket.io`);
  }
  const scheme = values.client === "ws" ? /^wss?:\/\// : /^https?:\/\//;
  if (values.url === undefined || !scheme.test(values.url)) {
    usage(`bad --url ${JSON.stringify(values.url)}: want ${values.client === "ws" ? "ws://HOST:PORT/PATH" : "http://HOST:PORT"}`);
  }
  const transports = values.transports.split(",");
  if (!transports.every((t) => t === "polling" || t === "websocket")) {
    usage(`bad --transports ${JSON.stringify(values.transports)}: want polling, websocket or polling,websocket`);
  }
  return { client: values.client, url: values.url, transports, timeoutMs: intFlag("timeout-ms", 3600000) };
}

const say = (event) => process.stdout.write(JSON.stringify(event) + "\n");

// Each client kind: open(name) returns {send(data), close()}.
function wsConn(opts, name) {
  const ws = new WebSocket(opts.url, { handshakeTimeout: opts.timeoutMs });
  let refused = false;
  ws.on("unexpected-response", (req, res) => {
    refused = true;
    say({ conn: name, event: "refused", status: res.statusCode, message: res.statusMessage });
    req.destroy();
  });
  ws.on("open", () => say({ conn: name, event: "open" }));
  ws.on("message", (data) => say({ conn: name, event: "message", data: data.toString() }));
  ws.on("error", (err) => {
    if (!refused && ws.readyState !== WebSocket.OPEN) {
      refused = true;
      say({ conn: name, event: "refused", status: 0, message: err.message });
    }
  });
  ws.on("close", (code, reason) => {
    if (!refused) say({ conn: name, event: "close", code, reason: reason.toString() });
  });
  return { send: (data) => ws.send(data), close: () => ws.close(1000) };
}

function socketIOConn(opts, name) {
  const s = io(opts.url, { transports: opts.transports, forceNew: true, reconnection: false, timeout: opts.timeoutMs });
  s.on("connect", () => say({ conn: name, event: "open" }));
  s.on("connect_error", (err) => {
    // Polling carries the HTTP status in description; the WebSocket
    // transport carries ws's error, whose message holds it.
    const d = err?.description;
    const status = typeof d === "number" ? d : Number(/\b([1-5][0-9][0-9])\b/.exec(String(d?.message ?? ""))?.[1] ?? 0);
    say({ conn: name, event: "refused", status, message: `${err?.message ?? err} ${d?.message ?? ""}`.trim() });
  });
  s.on("disconnect", (reason) => say({ conn: name, event: "close", code: 0, reason }));
  return {
    send: (data) => s.emit("echo", data, (got) => say({ conn: name, event: "message", data: got })),
    close: () => s.close(),
  };
}

function main() {
  const opts = parse(process.argv.slice(2));
  const open = opts.client === "ws" ? wsConn : socketIOConn;
  const conns = new Map();
  const lines = createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    if (line.trim() === "") return;
    let cmd;
    try {
      cmd = JSON.parse(line);
    } catch (err) {
      say({ event: "error", message: `not JSON: ${err.message}` });
      return;
    }
    if (typeof cmd.open === "string") {
      conns.set(cmd.open, open(opts, cmd.open));
    } else if (typeof cmd.send === "string" && conns.has(cmd.send)) {
      conns.get(cmd.send).send(String(cmd.data ?? ""));
    } else if (typeof cmd.close === "string" && conns.has(cmd.close)) {
      conns.get(cmd.close).close();
    } else {
      say({ event: "error", message: `unknown command or connection: ${line}` });
    }
  });
  lines.on("close", () => {
    for (const c of conns.values()) c.close();
    // Let the closes go out, then leave whatever is still open.
    setTimeout(() => process.exit(0), 200).unref();
  });
}

main();
