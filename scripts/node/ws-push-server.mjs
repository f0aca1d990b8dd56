// The Node `ws` push server that knowngood's broadcast targets are
// benchmarked against (make bench-broadcast): a client's echo
// ({"type":"echo",...}) comes back as it came, after which the client is a
// member; every 100 ms every member gets the targets' timed push,
// {"type":"push","seq":N,"sentAt":UNIX_NS,"payload":"x..."} with a
// 100-byte payload, made once and sent with ws.send to each.
// Usage: node scripts/node/ws-push-server.mjs [port=8080] [host=127.0.0.1]
// Prints one JSON line {"msg":"listening","addr":"HOST:PORT","ws":"8.x.y"}
// when ready; exits on SIGINT or SIGTERM after closing every client with 1001.
import { createRequire } from "node:module";
import { WebSocketServer } from "ws";

const port = Number(process.argv[2] ?? 8080);
const host = process.argv[3] ?? "127.0.0.1";
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`ws-push-server: bad port ${JSON.stringify(process.argv[2])}: want 0-65535`);
  process.exit(2);
}

const wss = new WebSocketServer({ port, host, perMessageDeflate: false, maxPayload: 1 << 20, clientTracking: false });
const members = new Set();
wss.on("connection", (ws) => {
  ws.on("message", (data, isBinary) => {
    if (!isBinary && data.toString().startsWith('{"type":"echo"')) {
      members.add(ws);
      ws.send(data, { binary: false });
    }
  });
  ws.on("close", () => members.delete(ws));
  ws.on("error", () => {}); // a bad client costs its connection only
});
// Unix nanoseconds, as the targets' sentAt: the wall clock at start plus
// the monotonic clock since.
const hrBase = process.hrtime.bigint();
const wallBase = BigInt(Date.now()) * 1000000n;
const filler = "x".repeat(100);
let seq = 0;
setInterval(() => {
  seq++;
  const sentAt = process.hrtime.bigint() - hrBase + wallBase;
  const msg = `{"type":"push","seq":${seq},"sentAt":${sentAt},"payload":"${filler}"}`;
  for (const ws of members) ws.send(msg);
}, 100);
wss.on("listening", () => {
  const { address, port } = wss.address();
  console.log(JSON.stringify({ msg: "listening", addr: `${address}:${port}`, ws: createRequire(import.meta.url)("ws/package.json").version }));
});
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => {
    for (const ws of members) ws.close(1001);
    wss.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 5000).unref();
  });
}
