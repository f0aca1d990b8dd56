// k6 recipe: Socket.IO v5 (Engine.IO v4) spoken over k6/ws, against a
// knowngood Socket.IO target (empty, async, blocking).
//
//   k6 run -e TARGET=http://127.0.0.1:8080 -e VUS=10 -e ITERATIONS=50 -e EMITS=5 scripts/k6/socketio.js
//   k6 run -e TARGET=http://127.0.0.1:8080 -e SIO_PATH=/socket/socket.io/ -e NAMESPACE=/cobrowse scripts/k6/socketio.js
//
// SIO_PATH is the server's Socket.IO path (knowngood's -path; default
// /socket.io/), NAMESPACE the namespace joined (default /): any other
// namespace is written in front of each packet's data ("40/cobrowse,").
//
// The packets, on a WebSocket-only session (no polling upgrade):
//   server: 0{"sid":...,"pingInterval":...}   Engine.IO open
//   client: 40                                CONNECT to the main namespace
//   server: 40{"sid":...}                     the namespace CONNECT ack
//   client: 42N["echo","..."]                 event "echo" with ack id N
//   server: 43N["..."]                        the ack, same arguments
//   server: 2 / client: 3                     Engine.IO ping / pong
// Each iteration connects, emits EMITS echo events one at a time, checks each
// ack, and closes. Thresholds make a failed check fail the run. The /stats
// diff should show ITERATIONS ok handshakes (transport websocket) and
// ITERATIONS x EMITS messages received and sent.
// The knowngood_* counters count what the server counts, in its units
// (handshakes tried and completed, Socket.IO events sent and acks back, not
// Engine.IO frames): loadgen watch reads them from the end-of-test summary.
import ws from "k6/ws";
import { check, fail } from "k6";
import { Counter, Trend } from "k6/metrics";
import { counters, runOptions } from "./knowngood.js";

const target = (__ENV.TARGET || "http://127.0.0.1:8080").replace(/^http/, "ws").replace(/\/$/, "");
const path = `/${(__ENV.SIO_PATH || "/socket.io/").replace(/^\/+|\/+$/g, "")}/`;
const url = `${target}${path}?EIO=4&transport=websocket`;
const namespace = __ENV.NAMESPACE || "/";
// nsp is what a packet carries between its type and its data: nothing for
// the main namespace, "/name," for another (socket.io-parser's format).
const nsp = namespace === "/" ? "" : `${namespace},`;
const emits = parseInt(__ENV.EMITS || "5", 10);
const timeoutMs = parseInt(__ENV.TIMEOUT_MS || "15000", 10);

const connected = new Counter("sio_connected");
const acked = new Counter("sio_acks_matched");
const connectTime = new Trend("sio_connect_duration", true);
const { attempts, ok, sent, received } = counters();

export const options = runOptions("socketio", { sio_connect_duration: ["p(99)<15000"] });

export default function () {
  const start = Date.now();
  let acks = 0;
  let sid = "";
  attempts.add(1);
  const res = ws.connect(url, null, (socket) => {
    const emit = () => {
      socket.send(`42${nsp}${acks + 1}${JSON.stringify(["echo", `k6 ${__VU}-${__ITER}-${acks + 1}`])}`);
      sent.add(1);
    };
    socket.on("message", (msg) => {
      if (msg === "2") {
        socket.send("3");
      } else if (msg.startsWith("0")) {
        socket.send(`40${nsp}`);
      } else if (msg.startsWith(`40${nsp}`)) {
        sid = JSON.parse(msg.slice(2 + nsp.length)).sid;
        connectTime.add(Date.now() - start);
        connected.add(1);
        ok.add(1);
        emit();
      } else if (msg.startsWith("44")) {
        fail(`connect error: ${msg}`);
      } else if (msg.startsWith(`43${nsp}`)) {
        received.add(1);
        const m = /^(\d+)(.*)$/.exec(msg.slice(2 + nsp.length));
        const id = m ? parseInt(m[1], 10) : -1;
        const ok = check(m && JSON.parse(m[2]), {
          "ack matches": (args) => id === acks + 1 && args[0] === `k6 ${__VU}-${__ITER}-${id}`,
        });
        if (ok) acked.add(1);
        acks++;
        if (acks < emits) {
          emit();
        } else {
          socket.send(`41${nsp}`); // DISCONNECT from the namespace, then close
          socket.close(1000);
        }
      }
    });
    socket.on("error", (e) => fail(`websocket error: ${e.error()}`));
    socket.setTimeout(() => socket.close(1000), timeoutMs);
  });
  check(res, { "status 101": (r) => r && r.status === 101 });
  check(sid, { "namespace CONNECT acked": (s) => s !== "" });
  check(acks, { "every ack came back": (n) => n === emits });
}
