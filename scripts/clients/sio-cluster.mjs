// sio-cluster: official socket.io-client v4 sockets on every server of a
// Socket.IO cluster, driven line by line from stdin, to check that
// broadcasts cross servers exactly once and that acks carry the cluster's
// counts.
//
//   node scripts/clients/sio-cluster.mjs --url http://A --url http://B [--per 4] [--room r] [--namespace /]
//
// Opens --per sockets (websocket transport) on --namespace of each --url;
// sockets with an even index on their server join --room. Then prints
//   {"msg":"ready","clients":[{"server":0,"id":"...","room":true},...]}
// and reads one JSON command per line, answering each with one JSON line:
//   {"cmd":"broadcast","server":i,"payload":P}            -> {"cmd":"broadcast","ack":N}
//   {"cmd":"broadcast-room","server":i,"room":R,"payload":P} -> {"cmd":"broadcast-room","ack":N}
//     (socket 0 of server i emits the event; N is the ack's argument, or
//     {"error":"..."} after 5 s)
//   {"cmd":"wait","payload":P,"room":bool}  -> {"cmd":"wait","missing":n}
//     (waits up to 10 s until every socket, or every room member, has
//     received broadcast P; n sockets had not)
//   {"cmd":"report"} -> {"cmd":"report","received":{P:[count per socket]}}
// Exit status: 0 on end of input, 1 when a socket cannot connect in 10 s,
// 2 on bad arguments.
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { io } from "socket.io-client";

let values;
try {
  ({ values } = parseArgs({
    options: { url: { type: "string", multiple: true }, per: { type: "string", default: "4" }, room: { type: "string", default: "r" }, namespace: { type: "string", default: "/" } },
  }));
} catch (err) {
  console.error(`sio-cluster: ${err.message}`);
  process.exit(2);
}
const per = Number(values.per);
if (!values.url?.length || !Number.isInteger(per) || per < 1 || per > 1000) {
  console.error("sio-cluster: want --url (one or more) and --per 1..1000");
  process.exit(2);
}

const out = (obj) => console.log(JSON.stringify(obj));
const received = new Map(); // payload -> counts per socket
const waiters = new Set();
const clients = [];

function connect(url, server, index) {
  return new Promise((resolve) => {
    const socket = io(url + values.namespace, { transports: ["websocket"], reconnection: false, forceNew: true });
    const c = { socket, server, room: index % 2 === 0, n: clients.length };
    clients.push(c);
    socket.on("broadcast", (payload) => {
      const key = JSON.stringify(payload);
      if (!received.has(key)) received.set(key, new Array(clients.length).fill(0));
      const counts = received.get(key);
      while (counts.length < clients.length) counts.push(0);
      counts[c.n]++;
      for (const w of waiters) w();
    });
    const timer = setTimeout(() => {
      console.error(`sio-cluster: no connect to ${url} within 10s`);
      process.exit(1);
    }, 10000);
    socket.on("connect", async () => {
      clearTimeout(timer);
      if (c.room) await socket.timeout(5000).emitWithAck("join", values.room);
      resolve();
    });
  });
}

await Promise.all(values.url.flatMap((url, server) => Array.from({ length: per }, (_, i) => connect(url, server, i))));
out({ msg: "ready", clients: clients.map((c) => ({ server: c.server, id: c.socket.id, room: c.room })) });

function missing(payload, roomOnly) {
  const counts = received.get(JSON.stringify(payload)) ?? [];
  return clients.filter((c) => (!roomOnly || c.room) && !(counts[c.n] > 0)).length;
}

async function run(cmd) {
  switch (cmd.cmd) {
    case "broadcast":
    case "broadcast-room": {
      const c = clients.find((c) => c.server === cmd.server);
      const args = cmd.cmd === "broadcast" ? [cmd.payload] : [cmd.room, cmd.payload];
      try {
        return { cmd: cmd.cmd, ack: await c.socket.timeout(5000).emitWithAck(cmd.cmd, ...args) };
      } catch (err) {
        return { cmd: cmd.cmd, error: err.message };
      }
    }
    case "wait":
      await new Promise((resolve) => {
        const check = () => {
          if (missing(cmd.payload, cmd.room) === 0) done();
        };
        const done = () => {
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(done, 10000);
        waiters.add(check);
        check();
      });
      return { cmd: "wait", missing: missing(cmd.payload, cmd.room) };
    case "report":
      return { cmd: "report", received: Object.fromEntries([...received].map(([k, v]) => [JSON.parse(k), clients.map((c) => v[c.n] ?? 0)])) };
    default:
      return { cmd: cmd.cmd, error: "unknown command" };
  }
}

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === "") continue;
  out(await run(JSON.parse(line)));
}
for (const c of clients) c.socket.close();
