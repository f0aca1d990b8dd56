// The Node `ws` echo server that knowngood's WebSocket echo targets are
// benchmarked against: every message back as it came (text as text, binary
// as binary), with the targets' default -max-message of 1 MiB and no
// compression.
// Usage: node scripts/node/ws-echo-server.mjs [port=8080] [host=127.0.0.1]
// Subprotocols as a ws server that serves some does it, with the targets'
// own settings from the environment: KG_SUBPROTOCOLS=a,b answers with the
// first the client offered that the list has (handleProtocols), and
// KG_SUBPROTOCOL_REQUIRED=true refuses a client offering none in
// verifyClient; without them, ws's defaults.
// Prints one JSON line {"msg":"listening","addr":"HOST:PORT","ws":"8.x.y"}
// when ready; exits on SIGINT or SIGTERM after closing every client with 1001.
import { createRequire } from "node:module";
import { WebSocketServer } from "ws";

const port = Number(process.argv[2] ?? 8080);
const host = process.argv[3] ?? "127.0.0.1";
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`ws-echo-server: bad port ${JSON.stringify(process.argv[2])}: want 0-65535`);
  process.exit(2);
}

const served = (process.env.KG_SUBPROTOCOLS ?? "").split(",").filter(Boolean);
const offered = (req) => (req.headers["sec-websocket-protocol"] ?? "").split(",").map((p) => p.trim());
const options = { port, host, perMessageDeflate: false, maxPayload: 1 << 20 };
if (served.length > 0) {
  options.handleProtocols = (protocols) => [...protocols].find((p) => served.includes(p)) ?? false;
}
if (process.env.KG_SUBPROTOCOL_REQUIRED === "true") {
  options.verifyClient = (info) => offered(info.req).some((p) => served.includes(p));
}
const wss = new WebSocketServer(options);
wss.on("connection", (ws) => {
  ws.on("message", (data, isBinary) => ws.send(data, { binary: isBinary }));
  ws.on("error", () => {}); // a bad client costs its connection only
});
wss.on("listening", () => {
  const { address, port } = wss.address();
  console.log(JSON.stringify({ msg: "listening", addr: `${address}:${port}`, ws: createRequire(import.meta.url)("ws/package.json").version }));
});
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => {
    for (const ws of wss.clients) ws.close(1001);
    wss.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 5000).unref();
  });
}
