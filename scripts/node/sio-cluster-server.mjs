// A Node socket.io v4 server on @socket.io/redis-adapter: the peer that
// knowngood's Socket.IO targets with -redis are tested against, in one
// cluster on one Redis. Same events as `knowngood -variant empty -redis URL`:
// echo, message, message-with-ack, broadcast, broadcast-room, join, on the
// namespaces / and /custom.
//
// Usage: node scripts/node/sio-cluster-server.mjs PORT REDIS_URL [host=127.0.0.1]
// Prints one JSON line {"msg":"listening","addr":"HOST:PORT",...} when ready.
//
// The broadcast acks carry the cluster-wide count from fetchSockets(), which
// waits for the answer of every server subscribed to the namespace's request
// channel (PUBSUB NUMSUB) for at most requestsTimeout: 1000 ms, the same
// bound as knowngood's. The adapter gives nothing when that time passes, so
// then the ack carries this server's own count.
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { Server } from "socket.io";
import { createAdapter } from "@socket.io/redis-adapter";
import { createClient } from "redis";

const port = Number(process.argv[2]);
const redisURL = process.argv[3];
const host = process.argv[4] ?? "127.0.0.1";
if (!Number.isInteger(port) || port < 0 || port > 65535 || !redisURL) {
  console.error("usage: sio-cluster-server.mjs PORT REDIS_URL [HOST]");
  process.exit(2);
}

// Redis may go away during a test: the clients reconnect by themselves
// (every 100 ms) and an error is logged, never thrown.
const clientOpts = { url: redisURL, socket: { reconnectStrategy: () => 100 } };
const pubClient = createClient(clientOpts);
const subClient = pubClient.duplicate();
for (const c of [pubClient, subClient]) c.on("error", (err) => console.error(`redis: ${err.message}`));
await Promise.all([pubClient.connect(), subClient.connect()]);

const httpServer = createServer();
const io = new Server(httpServer, { adapter: createAdapter(pubClient, subClient, { requestsTimeout: 1000 }) });

async function count(nsp, room) {
  const target = room === undefined ? nsp : nsp.in(room);
  try {
    return (await target.fetchSockets()).length;
  } catch {
    return room === undefined ? nsp.sockets.size : (nsp.adapter.rooms.get(room)?.size ?? 0);
  }
}

function serve(nsp) {
  nsp.on("connection", (socket) => {
    const withAck = (args) => (typeof args.at(-1) === "function" ? args.pop() : null);
    socket.on("echo", (...args) => {
      const ack = withAck(args);
      ack ? ack(...args) : socket.emit("echo", ...args);
    });
    socket.on("message", (...args) => {
      const ack = withAck(args);
      socket.emit("message-back", ...args);
      ack?.();
    });
    socket.on("message-with-ack", (...args) => withAck(args)?.(...args));
    socket.on("broadcast", async (...args) => {
      const ack = withAck(args);
      nsp.emit("broadcast", ...args);
      if (ack) ack(await count(nsp));
    });
    socket.on("broadcast-room", async (...args) => {
      const ack = withAck(args);
      const room = String(args.shift() ?? "");
      if (room !== "") nsp.to(room).emit("broadcast", ...args);
      if (ack) ack(room === "" ? 0 : await count(nsp, room));
    });
    socket.on("join", (...args) => {
      const ack = withAck(args);
      const room = args.length > 0 ? String(args[0]) : "";
      if (room !== "") socket.join(room);
      ack?.(room);
    });
  });
}
serve(io.of("/"));
serve(io.of("/custom"));

httpServer.on("error", (err) => {
  console.error(`sio-cluster-server: ${err.message}`);
  process.exit(1);
});
httpServer.listen(port, host, () => {
  const { address, port } = httpServer.address();
  const version = (name) => createRequire(import.meta.url)(`${name}/package.json`).version;
  console.log(JSON.stringify({ msg: "listening", addr: `${address}:${port}`, socketio: version("socket.io"), adapter: version("@socket.io/redis-adapter") }));
});
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => io.close(() => {
    Promise.allSettled([pubClient.quit(), subClient.quit()]).then(() => process.exit(0));
  }));
}
