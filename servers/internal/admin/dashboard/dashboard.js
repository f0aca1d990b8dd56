// The knowngood dashboard: polls /dashboard/stats (each replica's /stats
// document) about once a second, and shows the figures as a table, one
// column per replica plus their sum, and as SVG charts of the last two
// minutes. Hand-written, with no library: the page is embedded in the
// target's binary and must work with no network and no build step.
"use strict";

const REFRESH_MS = 1000;
const FETCH_TIMEOUT_MS = 2500;
const HISTORY = 120; // points kept per chart: two minutes at one a second
const SVG_NS = "http://www.w3.org/2000/svg";
const COLORS = ["#2a6fb0", "#d9822b", "#3a9a5b", "#b03a6f", "#7b5bb0", "#8c8c2a", "#2ab0a6", "#b05a2a"];

// Rows of the table: key, label, format. Group rows have no key.
const ROWS = [
  { group: "connections" },
  { key: "active", label: "active", fmt: int },
  { key: "opened", label: "opened", fmt: int },
  { key: "closed", label: "closed", fmt: int },
  { group: "handshakes" },
  { key: "hs_rate", label: "ok per second", fmt: rate },
  { key: "hs_ok", label: "ok", fmt: int },
  { key: "hs_rejected", label: "rejected", fmt: int, warn: true },
  { key: "hs_failed", label: "failed", fmt: int, warn: true },
  { key: "hs_abandoned", label: "abandoned", fmt: int, warn: true },
  { key: "loop_holds", label: "loop holds (blocking)", fmt: int },
  { key: "loop_gone", label: "loop holds, client gone", fmt: int, warn: true },
  { key: "p50", label: "p50, last second (ms)", fmt: ms },
  { key: "p99", label: "p99, last second (ms)", fmt: ms },
  { key: "p50_all", label: "p50 since start (ms)", fmt: ms },
  { key: "p99_all", label: "p99 since start (ms)", fmt: ms },
  { group: "messages" },
  { key: "in_rate", label: "in per second", fmt: rate },
  { key: "out_rate", label: "out per second", fmt: rate },
  { key: "received", label: "received", fmt: int },
  { key: "sent", label: "sent", fmt: int },
  { group: "hops of stamped events, p99 last second (ms)" },
  { key: "hop_client_to_replica", label: "client → replica (through nginx)", fmt: ms },
  { key: "hop_replica", label: "inside the replica", fmt: ms },
  { key: "hop_redis", label: "Redis, between replicas", fmt: ms },
  { group: "refused" },
  { key: "refused_emfile", label: "EMFILE (open-files limit)", fmt: int, warn: true },
  { key: "refused_accept", label: "other accept errors", fmt: int, warn: true },
  { key: "refused_cap", label: "at -max-conns", fmt: int, warn: true },
  { key: "listen_drops", label: "connects the kernel dropped at listen queues (whole network namespace)", fmt: int, warn: true },
  { key: "accept_queue", label: "waiting in the accept queue now", fmt: int },
  { key: "faults", label: "faults injected (-fault-*)", fmt: int, warn: true },
  { key: "interop", label: "requests a known server mishandles", fmt: int, warn: true },
  { group: "process" },
  { key: "rss", label: "resident memory (MiB)", fmt: mib },
  { key: "goroutines", label: "goroutines", fmt: int },
  { key: "cpu", label: "CPU (% of one core)", fmt: rate },
];

// Charts: title, and which figure of which columns each series draws.
// "each" draws one line per replica and one for the sum; otherwise the
// series are the sum's (the only column of a single process).
const CHARTS = [
  { id: "active", title: "connections active", each: "active", whole: true },
  { id: "hs_rate", title: "handshakes ok per second", each: "hs_rate" },
  { id: "messages", title: "messages per second", series: [["in", "in_rate"], ["out", "out_rate"]] },
  { id: "latency", title: "handshake latency, each second (ms)", series: [["p50", "p50"], ["p99", "p99"]] },
  { id: "rss", title: "resident memory (MiB)", each: "rss", scale: 1 / (1 << 20) },
  { id: "goroutines", title: "goroutines", each: "goroutines", whole: true },
];

// HOPS are the hops a target times for the events that ask for stamps (a
// "hops" object in an argument): the /stats "hops" keys.
const HOPS = ["client_to_replica", "replica", "redis"];

// Bins of the latency distribution, upper bounds in microseconds.
const BINS = [100, 300, 1e3, 3e3, 1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7, 3e7, Infinity];

const state = { prev: null, polls: 0, columns: null, history: {} };

// ---- figures ----

function sum(obj) {
  return Object.values(obj || {}).reduce((a, b) => a + b, 0);
}

// figures derives one column's row values from its document and the one
// before it (null: no rate yet, or the replica restarted in between).
function figures(cur, prev) {
  const h = cur.handshakes || {};
  const dt = prev ? cur.uptime_seconds - prev.uptime_seconds : 0;
  const rateOf = (f) => (prev && dt > 0 ? Math.max(0, (f(cur) - f(prev)) / dt) : null);
  const emfile = (cur.accept_errors || {}).EMFILE || 0;
  const interval = prev && dt > 0 ? bucketDiff(prev.handshake_histogram, cur.handshake_histogram) : [];
  const hopIntervals = {};
  const hops = {};
  for (const hop of HOPS) {
    const histogram = (doc) => ((doc.hops || {})[hop] || {}).histogram || [];
    hopIntervals[hop] = prev && dt > 0 ? bucketDiff(histogram(prev), histogram(cur)) : [];
    hops["hop_" + hop] = percentile(hopIntervals[hop], 0.99);
  }
  return {
    ...hops,
    hopIntervals: hopIntervals,
    active: cur.connections_active,
    opened: cur.connections_total,
    closed: sum(cur.disconnects),
    hs_ok: h.ok || 0,
    hs_rejected: h.rejected || 0,
    hs_failed: h.failed || 0,
    hs_abandoned: h.abandoned || 0,
    hs_rate: rateOf((s) => (s.handshakes || {}).ok || 0),
    p50: percentile(interval, 0.5),
    p99: percentile(interval, 0.99),
    p50_all: cur.handshake_latency.count ? cur.handshake_latency.p50 * 1000 : null,
    p99_all: cur.handshake_latency.count ? cur.handshake_latency.p99 * 1000 : null,
    received: cur.messages_received,
    sent: cur.messages_sent,
    in_rate: rateOf((s) => s.messages_received),
    out_rate: rateOf((s) => s.messages_sent),
    refused_emfile: emfile,
    refused_accept: sum(cur.accept_errors) - emfile,
    refused_cap: cur.max_conns_refused || 0,
    listen_drops: cur.listen_queue ? cur.listen_queue.drops : null,
    accept_queue: cur.listen_queue && cur.listen_queue.queued >= 0 ? cur.listen_queue.queued : null,
    faults: sum(cur.faults),
    loop_holds: sum(cur.loop_holds),
    loop_gone: (cur.loop_holds || {}).gone || 0,
    interop: sum(cur.interop_requests),
    rss: cur.resident_bytes,
    goroutines: cur.goroutines,
    cpu: rateOf((s) => s.cpu_seconds * 100),
    interval: interval,
    dt: dt,
  };
}

// total adds up the replicas' figures; percentiles come from their merged
// buckets, since percentiles do not add.
function total(cols, docs) {
  const t = {};
  const live = cols.filter((c) => c);
  for (const row of ROWS) {
    if (!row.key) continue;
    const vals = live.map((c) => c[row.key]).filter((v) => v !== null && v !== undefined);
    t[row.key] = vals.length ? vals.reduce((a, b) => a + b, 0) : null;
  }
  const interval = mergeBuckets(live.map((c) => c.interval));
  t.p50 = percentile(interval, 0.5);
  t.p99 = percentile(interval, 0.99);
  for (const hop of HOPS) {
    t["hop_" + hop] = percentile(mergeBuckets(live.map((c) => c.hopIntervals[hop])), 0.99);
  }
  const all = mergeBuckets(docs.filter((d) => d).map((d) => d.handshake_histogram || []));
  t.p50_all = percentile(all, 0.5);
  t.p99_all = percentile(all, 0.99);
  t.dt = live.length ? Math.max(...live.map((c) => c.dt)) : 0;
  // The kernel counts a namespace's drops once for every replica in it:
  // the largest, not the sum (replicas on one machine share one).
  const drops = live.map((c) => c.listen_drops).filter((v) => v !== null && v !== undefined);
  t.listen_drops = drops.length ? Math.max(...drops) : null;
  return t;
}

// bucketDiff is the handshakes between two cumulative histograms.
function bucketDiff(before, after) {
  const prev = new Map((before || []).map((b) => [b.le_us, b.n]));
  return (after || []).map((b) => ({ le_us: b.le_us, n: b.n - (prev.get(b.le_us) || 0) })).filter((b) => b.n > 0);
}

function mergeBuckets(lists) {
  const m = new Map();
  for (const list of lists) for (const b of list) m.set(b.le_us, (m.get(b.le_us) || 0) + b.n);
  return [...m].map(([le_us, n]) => ({ le_us, n })).sort((a, b) => a.le_us - b.le_us);
}

// percentile in ms: the upper bound of the bucket that holds the q-th
// value (the buckets are HdrHistogram's, 1% wide); null with no values.
function percentile(buckets, q) {
  const n = buckets.reduce((a, b) => a + b.n, 0);
  if (n === 0) return null;
  const rank = Math.max(1, Math.ceil(q * n));
  let seen = 0;
  for (const b of buckets) {
    seen += b.n;
    if (seen >= rank) return b.le_us / 1000;
  }
  return buckets[buckets.length - 1].le_us / 1000;
}

// ---- formats ----

function int(v) {
  return v === null || v === undefined ? "–" : Math.round(v).toLocaleString("en-US");
}
function rate(v) {
  if (v === null || v === undefined) return "–";
  return v < 100 ? v.toFixed(1) : Math.round(v).toLocaleString("en-US");
}
function ms(v) {
  if (v === null || v === undefined) return "–";
  return v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : Math.round(v).toLocaleString("en-US");
}
function mib(v) {
  return v === null || v === undefined ? "–" : (v / (1 << 20)).toFixed(1);
}
// short is an axis label: 950, 1.2k, 12k, 3.4M.
function short(v) {
  const a = Math.abs(v);
  if (a >= 1e6) return +(v / 1e6).toPrecision(2) + "M";
  if (a >= 1e3) return +(v / 1e3).toPrecision(2) + "k";
  if (a >= 10 || v === 0) return String(Math.round(v));
  return String(+v.toPrecision(2));
}
function usLabel(us) {
  if (us === Infinity) return ">30s";
  if (us < 1e3) return "≤" + us + "µs";
  if (us < 1e6) return "≤" + us / 1e3 + "ms";
  return "≤" + us / 1e6 + "s";
}

// ---- table ----

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function columnName(r) {
  if (!r.admin) return "this process";
  try {
    return new URL(r.admin).host;
  } catch (e) {
    return r.admin;
  }
}

// buildTable lays out the rows once per set of columns.
function buildTable(replicas) {
  const head = document.querySelector("#figures thead");
  const body = document.querySelector("#figures tbody");
  head.textContent = "";
  body.textContent = "";
  const ids = replicas.map((_, i) => String(i));
  if (replicas.length > 1) ids.push("sum");
  const tr = el("tr");
  tr.appendChild(el("th"));
  for (const id of ids) {
    const th = el("th", { "data-col": id, class: id === "sum" ? "sum" : "" }, id === "sum" ? "sum" : columnName(replicas[+id]));
    th.appendChild(el("small", { class: "detail" }));
    tr.appendChild(th);
  }
  head.appendChild(tr);
  for (const row of ROWS) {
    const r = el("tr", row.group ? { class: "group" } : {});
    if (row.group) {
      r.appendChild(el("th", { colspan: String(ids.length + 1) }, row.group));
    } else {
      r.appendChild(el("td", {}, row.label));
      for (const id of ids) r.appendChild(el("td", { "data-col": id, "data-key": row.key, class: id === "sum" ? "sum" : "" }, "–"));
    }
    body.appendChild(r);
  }
}

function fillColumn(id, figs, detail, error) {
  const th = document.querySelector(`#figures th[data-col="${id}"]`);
  const small = th.querySelector("small");
  small.textContent = error || detail;
  small.className = error ? "error" : "detail";
  for (const row of ROWS) {
    if (!row.key) continue;
    const td = document.querySelector(`#figures td[data-col="${id}"][data-key="${row.key}"]`);
    const v = figs ? figs[row.key] : null;
    td.textContent = row.fmt(v);
    td.dataset.value = v === null || v === undefined ? "" : String(v);
    td.classList.toggle("warn", !!row.warn && v > 0);
  }
  if (figs) th.dataset.interval = String(figs.dt);
}

// ---- charts ----

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

const W = 480, H = 170, LEFT = 46, RIGHT = 10, TOP = 8, BOTTOM = 22;

function buildCharts() {
  const box = document.getElementById("charts");
  box.textContent = "";
  for (const c of CHARTS.concat([{ id: "distribution", title: "handshake latency since start (count per bucket)" }])) {
    const fig = el("figure", { "data-chart": c.id });
    fig.appendChild(el("figcaption", {}, c.title));
    fig.appendChild(el("div", { class: "legend" }));
    fig.appendChild(svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": c.title }));
    box.appendChild(fig);
  }
}

// scale is the top of a chart's y axis and its gridline step: a step of
// 1, 2 or 5 times a power of ten (whole numbers for counts), so that the
// labels read 0, 20, 40 rather than 0, 13, 25; at most five steps.
function scale(v, whole) {
  if (!(v > 0)) v = whole ? 4 : 1;
  let step = Math.pow(10, Math.floor(Math.log10(v / 4)));
  for (const m of [1, 2, 5, 10]) {
    if (v / (m * step) <= 5) {
      step *= m;
      break;
    }
  }
  if (whole) step = Math.max(1, step);
  return { max: step * Math.max(1, Math.ceil(v / step - 1e-9)), step: step };
}

function yAxis(g, sc) {
  const plotH = H - TOP - BOTTOM;
  const n = Math.round(sc.max / sc.step);
  for (let i = 0; i <= n; i++) {
    const y = TOP + plotH - (plotH * i) / n;
    g.appendChild(svg("line", { x1: LEFT, x2: W - RIGHT, y1: y, y2: y, class: i ? "grid" : "axis" }));
    g.appendChild(svg("text", { x: LEFT - 5, y: y + 4, "text-anchor": "end" }, short(+(sc.step * i).toPrecision(6))));
  }
}

function legend(fig, names) {
  const box = fig.querySelector(".legend");
  box.textContent = "";
  names.forEach((name, i) => {
    const s = el("span");
    const swatch = el("i");
    swatch.style.background = COLORS[i % COLORS.length];
    s.appendChild(swatch);
    s.appendChild(document.createTextNode(name));
    box.appendChild(s);
  });
}

// lineChart draws series ([name, values]) over the last HISTORY points.
function lineChart(fig, series, whole) {
  const root = fig.querySelector("svg");
  root.textContent = "";
  const sc = scale(Math.max(0, ...series.flatMap(([, vs]) => vs.filter((v) => v !== null))), whole);
  const max = sc.max;
  yAxis(root, sc);
  const plotW = W - LEFT - RIGHT, plotH = H - TOP - BOTTOM;
  const x = (i, n) => LEFT + plotW * ((HISTORY - n + i) / (HISTORY - 1));
  [["-2 min", 0, "start"], ["-1 min", 0.5, "middle"], ["now", 1, "end"]].forEach(([label, at, anchor]) => {
    root.appendChild(svg("text", { x: LEFT + plotW * at, y: H - 6, "text-anchor": anchor }, label));
  });
  series.forEach(([, values], si) => {
    let d = "";
    let pen = false;
    values.forEach((v, i) => {
      if (v === null) {
        pen = false;
        return;
      }
      d += (pen ? "L" : "M") + x(i, values.length).toFixed(1) + "," + (TOP + plotH - (plotH * v) / max).toFixed(1);
      pen = true;
    });
    const width = si === series.length - 1 && series.length > 2 ? 2.5 : 1.5;
    root.appendChild(svg("path", { d: d, fill: "none", stroke: COLORS[si % COLORS.length], "stroke-width": width }));
    // A point with no neighbour draws no line: mark it (the first refresh).
    values.forEach((v, i) => {
      if (v !== null && (values[i - 1] ?? null) === null && (values[i + 1] ?? null) === null) {
        const cy = TOP + plotH - (plotH * v) / max;
        root.appendChild(svg("circle", { cx: x(i, values.length).toFixed(1), cy: cy.toFixed(1), r: 2, fill: COLORS[si % COLORS.length] }));
      }
    });
  });
  legend(fig, series.length > 1 ? series.map(([name]) => name) : []);
}

// barChart draws the latency distribution in BINS.
function barChart(fig, buckets) {
  const root = fig.querySelector("svg");
  root.textContent = "";
  const counts = BINS.map(() => 0);
  for (const b of buckets) counts[BINS.findIndex((up) => b.le_us <= up)] += b.n;
  let first = counts.findIndex((n) => n > 0);
  let last = counts.length - 1 - [...counts].reverse().findIndex((n) => n > 0);
  if (first < 0) [first, last] = [2, 7];
  first = Math.max(0, Math.min(first, last - 5));
  last = Math.min(BINS.length - 1, Math.max(last, first + 5));
  const shown = counts.slice(first, last + 1);
  const sc = scale(Math.max(...shown), true);
  const max = sc.max;
  yAxis(root, sc);
  const plotW = W - LEFT - RIGHT, plotH = H - TOP - BOTTOM;
  const bw = plotW / shown.length;
  shown.forEach((n, i) => {
    const h = (plotH * n) / max;
    root.appendChild(svg("rect", { x: LEFT + i * bw + 2, y: TOP + plotH - h, width: bw - 4, height: h, fill: COLORS[0] }));
    root.appendChild(svg("text", { x: LEFT + (i + 0.5) * bw, y: H - 6, "text-anchor": "middle" }, usLabel(BINS[first + i])));
  });
  dropOverlapping(root);
}

// dropOverlapping removes the bin labels that would touch the one before,
// so that a narrow chart shows every other label rather than a smear.
function dropOverlapping(root) {
  let right = -Infinity;
  for (const t of [...root.querySelectorAll("text[text-anchor=middle]")]) {
    const b = t.getBBox();
    if (b.x < right + 4) t.remove();
    else right = b.x + b.width;
  }
}

function pushHistory(key, v) {
  const h = (state.history[key] = state.history[key] || []);
  h.push(v === undefined ? null : v);
  if (h.length > HISTORY) h.shift();
  return h;
}

function drawCharts(ids, names, figs, docs) {
  const sumId = ids[ids.length - 1];
  for (const c of CHARTS) {
    const fig = document.querySelector(`figure[data-chart="${c.id}"]`);
    const scale = c.scale || 1;
    const scaled = (v) => (v === null || v === undefined ? null : v * scale);
    let series;
    if (c.each) {
      series = ids.map((id, i) => [names[i], pushHistory(c.id + "/" + id, scaled(figs[id] ? figs[id][c.each] : null))]);
    } else {
      series = c.series.map(([name, key]) => [name, pushHistory(c.id + "/" + key, scaled(figs[sumId][key]))]);
    }
    lineChart(fig, series, c.whole);
  }
  const all = mergeBuckets(docs.filter((d) => d).map((d) => d.handshake_histogram || []));
  barChart(document.querySelector('figure[data-chart="distribution"]'), all);
}

// ---- the loop ----

function render(replicas) {
  const key = replicas.map((r) => r.admin).join(",");
  if (key !== state.columns) {
    state.columns = key;
    state.prev = null;
    state.history = {};
    buildTable(replicas);
  }
  const docs = replicas.map((r) => r.stats || null);
  const prevDocs = state.prev || [];
  const figs = {};
  const ids = [];
  const names = [];
  replicas.forEach((r, i) => {
    const id = String(i);
    ids.push(id);
    names.push(columnName(r));
    const prev = prevDocs[i] && docs[i] && docs[i].uptime_seconds >= prevDocs[i].uptime_seconds ? prevDocs[i] : null;
    figs[id] = docs[i] ? figures(docs[i], prev) : null;
    const detail = docs[i] ? `${docs[i].variant}, up ${Math.round(docs[i].uptime_seconds)} s` : "";
    fillColumn(id, figs[id], detail, r.error);
    const th = document.querySelector(`#figures th[data-col="${id}"]`);
    th.dataset.uptime = docs[i] ? String(docs[i].uptime_seconds) : "";
  });
  if (replicas.length > 1) {
    figs.sum = total(ids.map((id) => figs[id]), docs);
    ids.push("sum");
    names.push("sum");
    const up = docs.filter((d) => d).length;
    fillColumn("sum", figs.sum, `${up} of ${replicas.length} replicas`, up ? "" : "no replica answered");
  } else {
    figs.sum = figs["0"];
  }
  const variants = [...new Set(docs.filter((d) => d).map((d) => d.variant))];
  document.getElementById("variant").textContent = variants.join(", ");
  document.title = "knowngood " + variants.join(", ");
  drawCharts(ids, names, figs, docs);
  state.prev = docs;
}

function setStatus(text, error) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = error ? "error" : "";
}

async function poll() {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), FETCH_TIMEOUT_MS);
  try {
    const resp = await fetch("/dashboard/stats", { signal: ctl.signal, cache: "no-store" });
    if (!resp.ok) throw new Error(`/dashboard/stats answered ${resp.status}`);
    const replicas = await resp.json();
    render(replicas);
    state.polls++;
    document.body.dataset.polls = String(state.polls);
    const errors = replicas.filter((r) => r.error).length;
    setStatus(`updated ${new Date().toLocaleTimeString()}, every ${REFRESH_MS / 1000} s` + (errors ? `; ${errors} replica(s) not answering` : ""), errors > 0);
  } catch (e) {
    setStatus(`cannot read the figures (${e.name === "AbortError" ? "no answer in " + FETCH_TIMEOUT_MS / 1000 + " s" : e.message}); retrying`, true);
  } finally {
    clearTimeout(timer);
    setTimeout(poll, REFRESH_MS);
  }
}

buildCharts();
poll();
