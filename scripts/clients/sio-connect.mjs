// sio-connect: open N Socket.IO connections at once with the official
// socket.io-client v4 and report how many completed the namespace CONNECT
// within the deadline, as one JSON line on stdout.
//
//   node scripts/clients/sio-connect.mjs --url http://127.0.0.1:8080 --n 500 \
//     --transports websocket|polling|polling,websocket --deadline-ms 15000 \
//     [--echo [--binary]] [--hold-ms N] [--namespace /] [--path /socket.io/] [--sticky] [--reconnect N] [--client v4|v2]
//
// --client v2 runs the legacy socket.io-client 2.5.0 instead (Engine.IO v3,
// Socket.IO v2, pinned as socket.io-client-v2): what older load tools speak,
// for a target run with -allow-eio3.
//
// Output (one line):
//   {"client":"socket.io-client","version":"4.x.y","attempts":N,"connected":n,
//    "echoed":n,"failed":n,"errors":{"message":count},"p50_ms":..,"p95_ms":..,
//    "p99_ms":..,"max_ms":..,"total_ms":..,"loop_delay_max_ms":..,"sent":n,"received":n}
// failed = attempts - connected, and the counts in errors add up to failed.
// Latency is from a connection's start to its "connect" event; percentiles are
// nearest-rank over the connected ones (null when none connected). total_ms
// covers the connect phase only. With --echo, every connected socket then
// emits `echo` with a payload and waits for the same payload back in the ack,
// within a second window of --deadline-ms; echo failures are counted in
// "echo_errors", not in errors. --binary makes that payload bytes (a binary
// event, and a binary ack back) instead of a string. --hold-ms N keeps the
// connections open N ms after the connect phase, before the echo: an echo
// that then comes back shows the session outlived the target's pings.
// --sticky sends query {sticky: "<pid>-<i>"} on every request of connection
// i, which nginx's query_hash balancing (docker/nginx) keys on. --reconnect
// N lets each connection try N more times after a failed connect (the
// library's reconnection, 100-500 ms apart); it fails once it gives up.
// Every connect_error of every attempt that carries an HTTP answer is
// counted in "http_errors" by status and body ("400 {\"code\":1,...}"), and
// every connect_error in "attempt_errors" by message. "loop_delay_max_ms"
// is the longest this process's event loop was held up during the connect
// phase: how late it can have seen any event, so that a test can tell the
// client's lateness from the server's on a busy machine.
// Exit status: 0 when it ran (the counts tell the result), 2 on bad arguments.
import { createRequire } from "node:module";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { flags } from "./flags.mjs";

// The package of each --client; both export io() (v2 as CommonJS's default).
const CLIENTS = { v4: "socket.io-client", v2: "socket.io-client-v2" };
const TRANSPORTS = { websocket: ["websocket"], polling: ["polling"], "polling,websocket": ["polling", "websocket"] };

function parse(argv) {
  const { values, usage, intFlag } = flags("sio-connect", argv, {
    url: { type: "string" },
    n: { type: "string", default: "1" },
    transports: { type: "string", default: "websocket" },
    "deadline-ms": { type: "string", default: "15000" },
    echo: { type: "boolean", default: false },
    binary: { type: "boolean", default: false },
    "hold-ms": { type: "string", default: "0" },
    client: { type: "string", default: "v4" },
    times: { type: "boolean", default: false },
    namespace: { type: "string", default: "/" },
    // The server's Socket.IO path (socket.io-client's path option).
    path: { type: "string", default: "/socket.io/" },
    // https/wss: accept any certificate (a self-signed test pair).
    // engine.io-client's polling transport checks certificates itself
    // (rejectUnauthorized), whatever NODE_TLS_REJECT_UNAUTHORIZED says.
    insecure: { type: "boolean", default: false },
    sticky: { type: "boolean", default: false },
    reconnect: { type: "string", default: "0" },
  });
  if (values.url === undefined) usage("missing --url: want http://HOST:PORT");
  let url;
  try {
    url = new URL(values.url);
  } catch {
    url = null;
  }
  if (!url || !["http:", "https:", "ws:", "wss:"].includes(url.protocol)) {
    usage(`bad --url ${JSON.stringify(values.url)}: want http://HOST:PORT`);
  }
  if (!(values.transports in TRANSPORTS)) {
    usage(`bad --transports ${JSON.stringify(values.transports)}: want websocket, polling or polling,websocket`);
  }
  if (!values.namespace.startsWith("/")) {
    usage(`bad --namespace ${JSON.stringify(values.namespace)}: want a path starting with /`);
  }
  if (!values.path.startsWith("/")) {
    usage(`bad --path ${JSON.stringify(values.path)}: want a path starting with /, such as /socket.io/`);
  }
  if (!(values.client in CLIENTS)) {
    usage(`bad --client ${JSON.stringify(values.client)}: want v4 or v2`);
  }
  if (!/^[0-9]+$/.test(values["hold-ms"]) || Number(values["hold-ms"]) > 3600000) {
    usage(`bad --hold-ms ${JSON.stringify(values["hold-ms"])}: want an integer from 0 to 3600000`);
  }
  if (!/^[0-9]+$/.test(values.reconnect) || Number(values.reconnect) > 1000) {
    usage(`bad --reconnect ${JSON.stringify(values.reconnect)}: want an integer from 0 to 1000`);
  }
  return {
    url: url.origin + (values.namespace === "/" ? "" : values.namespace),
    n: intFlag("n", 1000000),
    transports: TRANSPORTS[values.transports],
    path: values.path,
    deadlineMs: intFlag("deadline-ms", 3600000),
    echo: values.echo,
    binary: values.binary,
    holdMs: Number(values["hold-ms"]),
    client: CLIENTS[values.client],
    times: values.times,
    insecure: values.insecure,
    sticky: values.sticky,
    reconnect: Number(values.reconnect),
  };
}

// percentile returns the nearest-rank p-th percentile of sorted, or null.
function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const i = Math.max(0, Math.ceil((p / 100) * sorted.length) - 1);
  return round(sorted[i]);
}

const round = (ms) => Math.round(ms * 1000) / 1000;

function count(map, key) {
  map[key] = (map[key] ?? 0) + 1;
}

// connectAll starts every connection at once and resolves when each one has
// connected, failed, or run out of the deadline.
function connectAll(io, opts) {
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  loopDelay.enable();
  const start = performance.now();
  const sockets = [];
  const latencies = [];
  const completions = []; // since the common start, for --times
  const errors = {};
  const attemptErrors = {};
  const httpErrors = {};
  return new Promise((resolve) => {
    let pending = opts.n;
    const done = () => {
      if (--pending === 0) {
        clearTimeout(timer);
        loopDelay.disable();
        resolve({ sockets, latencies, completions, errors, attemptErrors, httpErrors, totalMs: performance.now() - start, loopDelayMaxMs: loopDelay.max / 1e6 });
      }
    };
    const timer = setTimeout(() => {
      for (const s of sockets) {
        if (s.state === "pending") {
          s.state = "failed";
          count(errors, "deadline exceeded");
          s.socket.close();
        }
      }
      loopDelay.disable();
      resolve({ sockets, latencies, completions, errors, attemptErrors, httpErrors, totalMs: performance.now() - start, loopDelayMaxMs: loopDelay.max / 1e6 });
    }, opts.deadlineMs);
    for (let i = 0; i < opts.n; i++) {
      const t0 = performance.now();
      const s = { state: "pending", socket: null };
      s.socket = io(opts.url, {
        path: opts.path,
        forceNew: true,
        reconnection: opts.reconnect > 0,
        reconnectionAttempts: opts.reconnect,
        reconnectionDelay: 100,
        reconnectionDelayMax: 500,
        query: opts.sticky ? { sticky: `${process.pid}-${i}` } : {},
        timeout: opts.deadlineMs,
        transports: opts.transports,
        rejectUnauthorized: !opts.insecure,
      });
      s.socket.once("connect", () => {
        if (s.state !== "pending") return;
        s.state = "connected";
        latencies.push(performance.now() - t0);
        completions.push(performance.now() - start);
        done();
      });
      const fail = (message) => {
        if (s.state !== "pending") return;
        s.state = "failed";
        count(errors, message);
        done();
      };
      let last = "";
      s.socket.on("connect_error", (err) => {
        last = err?.message || String(err);
        count(attemptErrors, last);
        // engine.io-client's TransportError: the HTTP status and the
        // request, whose body says why (Engine.IO's {"code":..,"message":..}).
        if (typeof err?.description === "number" && err.description > 0) {
          count(httpErrors, `${err.description} ${err.context?.responseText ?? ""}`.trim());
        }
        if (opts.reconnect === 0) fail(last);
      });
      s.socket.io.on("reconnect_failed", () => fail(last));
      sockets.push(s);
    }
  });
}

// echoAll emits `echo` on every connected socket and counts the acks that
// carry the payload back. The ack's deadline is a timer of its own, not
// socket.timeout(), which socket.io-client 2 does not have.
async function echoAll(sockets, deadlineMs, binary) {
  const echoErrors = {};
  let sent = 0;
  let received = 0;
  const results = await Promise.all(
    sockets
      .filter((s) => s.state === "connected")
      .map(
        (s, i) =>
          new Promise((resolve) => {
            const text = `echo-${i}`;
            const payload = binary ? Buffer.from(text) : text;
            sent++;
            // A socket that lost its session never gets the ack: the
            // reason it gave is counted instead of the timeout.
            let lost = null;
            s.socket.once("disconnect", (reason) => {
              lost = reason;
            });
            // An ack after the deadline is not counted, as with timeout().
            let timer = setTimeout(() => {
              timer = null;
              count(echoErrors, lost === null ? "operation has timed out" : `disconnected (${lost})`);
              resolve(false);
            }, deadlineMs);
            s.socket.emit("echo", payload, (got) => {
              if (timer === null) return;
              clearTimeout(timer);
              received++;
              if (!sameEcho(got, payload)) {
                count(echoErrors, "wrong ack payload");
                resolve(false);
              } else {
                resolve(true);
              }
            });
          }),
      ),
  );
  return { echoed: results.filter(Boolean).length, echoErrors, sent, received };
}

// sameEcho: a string comes back as the same string; bytes as a Buffer or an
// ArrayBuffer (socket.io-client 2) holding the same bytes.
function sameEcho(got, payload) {
  if (typeof payload === "string") return got === payload;
  return (Buffer.isBuffer(got) || got instanceof ArrayBuffer) && Buffer.from(got).equals(payload);
}

async function main() {
  const opts = parse(process.argv.slice(2));
  const client = await import(opts.client);
  const version = createRequire(import.meta.url)(`${opts.client}/package.json`).version;
  const run = await connectAll(client.io ?? client.default, opts);
  const connected = run.sockets.filter((s) => s.state === "connected").length;
  if (opts.holdMs > 0) await new Promise((resolve) => setTimeout(resolve, opts.holdMs));
  let echo = { echoed: 0, echoErrors: {}, sent: 0, received: 0 };
  if (opts.echo) echo = await echoAll(run.sockets, opts.deadlineMs, opts.binary);
  for (const s of run.sockets) s.socket.close();
  const sorted = run.latencies.sort((a, b) => a - b);
  const report = {
    client: "socket.io-client",
    version,
    attempts: opts.n,
    connected,
    echoed: echo.echoed,
    failed: opts.n - connected,
    errors: run.errors,
    attempt_errors: run.attemptErrors,
    http_errors: run.httpErrors,
    p50_ms: percentile(sorted, 50),
    p95_ms: percentile(sorted, 95),
    p99_ms: percentile(sorted, 99),
    max_ms: sorted.length ? round(sorted[sorted.length - 1]) : null,
    total_ms: round(run.totalMs),
    loop_delay_max_ms: round(run.loopDelayMaxMs),
    sent: echo.sent,
    received: echo.received,
  };
  if (opts.echo) report.echo_errors = echo.echoErrors;
  // --times: when each connect completed, since the moment they all
  // started, sorted (the blocking curve).
  if (opts.times) report.times_ms = run.completions.sort((a, b) => a - b).map(round);
  process.stdout.write(JSON.stringify(report) + "\n", () => process.exit(0));
}

main();
