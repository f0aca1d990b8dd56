// k6 recipe: WebSocket echo over k6/ws against a knowngood echo target.
//
//   k6 run -e TARGET=ws://127.0.0.1:8083/ -e VUS=10 -e ITERATIONS=50 -e MESSAGES=20 scripts/k6/ws-echo.js
//
// Each iteration opens one connection, sends MESSAGES text messages one at a
// time, checks that each comes back unchanged, and closes with 1000. A check
// that fails, or a connection that does not finish, fails the run
// (thresholds), so k6's exit status is the verdict. The server's /stats diff
// should then show ITERATIONS connections and ITERATIONS x MESSAGES messages
// each way (see scripts/README.md). The knowngood_* counters count what the
// server counts (connections tried and upgraded, messages each way):
// loadgen watch reads them from the end-of-test summary.
import ws from "k6/ws";
import { check, fail } from "k6";
import { Counter } from "k6/metrics";
import { counters, runOptions } from "./knowngood.js";

const target = __ENV.TARGET || "ws://127.0.0.1:8083/";
const messages = parseInt(__ENV.MESSAGES || "20", 10);
const timeoutMs = parseInt(__ENV.TIMEOUT_MS || "10000", 10);

const echoed = new Counter("echoes_matched");
const finished = new Counter("sessions_finished");
const { attempts, ok, sent: sentCount, received: receivedCount } = counters();

export const options = runOptions("echo", { ws_connecting: ["p(99)<5000"] });

export default function () {
  let sent = 0;
  let got = 0;
  attempts.add(1);
  const res = ws.connect(target, null, (socket) => {
    const next = () => {
      sent++;
      socket.send(`k6 ${__VU}-${__ITER}-${sent}`);
      sentCount.add(1);
    };
    socket.on("open", () => {
      ok.add(1);
      next();
    });
    socket.on("message", (data) => {
      got++;
      receivedCount.add(1);
      if (check(data, { "echo matches": (d) => d === `k6 ${__VU}-${__ITER}-${got}` })) {
        echoed.add(1);
      }
      if (got < messages) {
        next();
      } else {
        socket.close(1000);
      }
    });
    socket.on("close", () => finished.add(1));
    socket.on("error", (e) => fail(`websocket error: ${e.error()}`));
    socket.setTimeout(() => socket.close(1000), timeoutMs);
  });
  check(res, { "status 101": (r) => r && r.status === 101 });
  check(got, { "every echo came back": (n) => n === messages });
}
