// The Node `ws` echo server that knowngood's WebSocket echo targets are
// benchmarked against: every message back as it came (text as text, binary
// as binary), with the targets' default -max-message of 1 MiB and no
// compression.
// Usage: node scripts/node/ws-echo-server.mjs [port=8080] [host=127.0.0.1]
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

const wss = new WebSocketServer({ port, host, perMessageDeflate: false, maxPayload: 1 << 20 });
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
