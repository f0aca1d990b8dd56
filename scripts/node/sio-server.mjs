// The Node socket.io v4 reference server that knowngood's Socket.IO targets
// are benchmarked against, in one process: the events of `knowngood
// -variant empty` that the benchmarks' clients send (echo, message,
// message-with-ack; join and broadcast-room for the room broadcast, acked
// as `empty` without -redis does: the room's name, this server's count).
// With --connect, the founding report's three connect handlers, in
// namespace middleware (io.use) as a Node service writes them: empty
// (nothing), async (a setTimeout of --delay-ms before next()) and blocking
// (a busy-wait of --delay-ms: the one thread, and every socket on it,
// stops meanwhile).
// With --recovery-ms, Node's connection state recovery
// (connectionStateRecovery.maxDisconnectionDuration); with
// --push-interval-ms, the timed push of knowngood's -push-interval: a
// "tick" of {seq, sentAt (Unix ns), room, payload} to every socket, or
// with --push-rooms N to each room push-1..push-N, numbered per room.
// Usage: node scripts/node/sio-server.mjs [port=3000] [host=127.0.0.1] [--connect empty|async|blocking] [--delay-ms 50]
//   [--recovery-ms 0] [--push-interval-ms 0] [--push-rooms 0]
// Prints one JSON line {"msg":"listening","addr":"HOST:PORT"} when ready.
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { Server } from "socket.io";

const positional = [];
const opts = { connect: "empty", delayMs: 50, recoveryMs: 0, pushIntervalMs: 0, pushRooms: 0 };
const numbers = { "--delay-ms": "delayMs", "--recovery-ms": "recoveryMs", "--push-interval-ms": "pushIntervalMs", "--push-rooms": "pushRooms" };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (a === "--connect") opts.connect = process.argv[++i];
  else if (numbers[a]) opts[numbers[a]] = Number(process.argv[++i]);
  else positional.push(a);
}
const port = Number(positional[0] ?? 3000);
const host = positional[1] ?? "127.0.0.1";
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`sio-server: bad port ${JSON.stringify(positional[0])}: want 0-65535`);
  process.exit(2);
}
if (!["empty", "async", "blocking"].includes(opts.connect)) {
  console.error(`sio-server: bad --connect ${JSON.stringify(opts.connect)}: want empty, async or blocking`);
  process.exit(2);
}
for (const [flag, key] of Object.entries(numbers)) {
  if (!Number.isInteger(opts[key]) || opts[key] < 0) {
    console.error(`sio-server: bad ${flag} ${JSON.stringify(opts[key])}: want 0 or more`);
    process.exit(2);
  }
}

const httpServer = createServer();
const io = new Server(httpServer, opts.recoveryMs > 0 ? { connectionStateRecovery: { maxDisconnectionDuration: opts.recoveryMs } } : {});
if (opts.pushIntervalMs > 0) {
  const rooms = opts.pushRooms > 0 ? Array.from({ length: opts.pushRooms }, (_, i) => `push-${i + 1}`) : [""];
  let seq = 0;
  setInterval(() => {
    seq++;
    const sentAt = Date.now() * 1e6; // ns, as knowngood's; ms precision
    for (const room of rooms) {
      const push = { seq, sentAt, ...(room ? { room } : {}), payload: "x".repeat(100) };
      (room ? io.to(room) : io).emit("tick", push);
    }
  }, opts.pushIntervalMs);
}
if (opts.connect === "async") {
  io.use((_socket, next) => setTimeout(next, opts.delayMs));
} else if (opts.connect === "blocking") {
  io.use((_socket, next) => {
    const until = Date.now() + opts.delayMs;
    while (Date.now() < until); // the synchronous call: nothing else runs
    next();
  });
}
io.on("connection", (socket) => {
  socket.on("echo", (...args) => typeof args.at(-1) === "function" && args.pop()(...args));
  socket.on("message", (...args) => socket.emit("message-back", ...args));
  socket.on("message-with-ack", (...args) => typeof args.at(-1) === "function" && args.pop()(...args));
  socket.on("join", (...args) => {
    const ack = typeof args.at(-1) === "function" ? args.pop() : null;
    const room = args.length > 0 ? String(args[0]) : "";
    if (room !== "") socket.join(room);
    ack?.(room);
  });
  socket.on("broadcast-room", (...args) => {
    const ack = typeof args.at(-1) === "function" ? args.pop() : null;
    const room = String(args.shift() ?? "");
    const members = room === "" ? 0 : (io.of("/").adapter.rooms.get(room)?.size ?? 0);
    if (room !== "") io.to(room).emit("broadcast", ...args);
    ack?.(members);
  });
});
httpServer.on("error", (err) => {
  console.error(`sio-server: ${err.message}`);
  process.exit(1);
});
httpServer.listen(port, host, () => {
  const { address, port } = httpServer.address();
  console.log(JSON.stringify({ msg: "listening", addr: `${address}:${port}`, socketio: createRequire(import.meta.url)("socket.io/package.json").version, connect: opts.connect }));
});
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => io.close(() => process.exit(0)));
