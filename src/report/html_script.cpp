// report/html_script: the page's inline script. It reads the embedded report data (<script id="report-data">)
// and draws every section as inline SVG/HTML: summary cards, placement grid, Gantt (zoom, hover, replica
// selector), memory curves, per-stage stacked bars and the "why" tables. No network, no external library.
#include "report_internal.hpp"

namespace strata::report::detail {
namespace {

constexpr std::string_view kScript = R"JS(
"use strict";
const D = JSON.parse(document.getElementById("report-data").textContent);
// Task starts are stored as differences to the previous task's start: add them up once.
for (const w of D.timeline.workers) for (const a of [w.compute, w.comm]) for (let k = 0, t = 0; k < a.length; k += 5) a[k] = t += a[k];
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;"}[c]));
function fmtS(s) {
  const a = Math.abs(s);
  if (a >= 1) return s.toFixed(a >= 100 ? 0 : 2) + " s";
  if (a >= 1e-3) return (s * 1e3).toFixed(a >= 0.1 ? 0 : 1) + " ms";
  if (a >= 1e-6) return (s * 1e6).toFixed(a >= 1e-4 ? 0 : 1) + " µs";
  return s === 0 ? "0" : (s * 1e9).toFixed(0) + " ns";
}
function fmtB(b) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return b.toFixed(b >= 100 ? 0 : 1) + " " + u[i];
}
const TYPE_COLORS = ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#9d755d", "#bab0ac"];
function hue(i, n) { return "hsl(" + Math.round((360 * i) / Math.max(1, n)) + ",55%,55%)"; }
// Task tag (sim::TaskTag order) → css class.
const TAG_CLASS = ["fwd", "bwd", "rec", "comm", "opt", "comm", "comm", "comm", "comm", "comm"];
const TAG_WORDS = ["forward", "backward", "recompute", "TP communication", "optimizer step", "send activations",
  "send gradients", "DP gradient sync", "ZeRO parameter gather", "ZeRO-3 gather"];

function card(item) {
  return '<div class="card"><div class="label">' + esc(item.label) + '</div><div class="num" data-key="' +
    esc(item.key) + '" data-value="' + item.value + '">' + esc(item.text) + "</div></div>";
}

function renderSummary() {
  const S = D.summary, T = D.timeline;
  let h = '<p class="words" id="strategy-words">' + esc(S.words) + ".</p>";
  h += '<p class="muted">GPU types per stage: ' + esc(S.placement) + ". Global batch " + S.gbs + ", sequence " +
    S.seq + ".</p>";
  h += '<div class="cards">' + S.numbers.map(card).join("");
  h += card({key: "simulated_iteration_time_s", label: "iteration time (simulated)",
    value: T.iteration_time_s, text: T.iteration_time_text});
  h += "</div>";
  if (S.gains.length) h += '<ul class="gains">' + S.gains.map((g) => '<li><span class="num" data-key="' +
    esc(g.key) + '" data-value="' + g.value + '">' + esc(g.text) + "</span></li>").join("") + "</ul>";
  // Launch: the export module's script (collapsed) and the strategy string every strata command accepts.
  const L = S.launch;
  h += '<div class="launch" id="launch"><div class="label">strategy string (strata estimate / simulate / run --strategy):</div><code id="strategy-cli">' +
    esc(S.strategy_cli) + "</code>" + (L.text ? '<details><summary>launch script: ' + esc(L.file) + " (" + esc(L.engine) +
    "; <code>" + esc(L.command) + '</code>)</summary><pre id="launch-script">' + esc(L.text) + "</pre></details>"
    : '<div class="label">' + esc(L.note) + "</div>") + "</div>";
  $("summary-body").innerHTML = h;
}

function renderPlacement() {
  const P = D.placement, by = $("place-colour").value;
  const cell = 26, gap = 3, pad = 6;
  const maxPer = Math.max(...P.nodes.map((n) => n[2]));
  const nodeW = pad * 2 + maxPer * (cell + gap) - gap, nodeH = cell + pad * 2 + 14;
  const perRow = Math.max(1, Math.floor(($("placement").clientWidth - 8) / (nodeW + 10)));
  const rows = Math.ceil(P.nodes.length / perRow);
  const W = perRow * (nodeW + 10), H = rows * (nodeH + 10);
  const colour = (d) => by === "type" ? TYPE_COLORS[d[0] % TYPE_COLORS.length]
    : by === "stage" ? hue(d[1], P.pp) : hue(d[2], Math.max(2, P.dp));
  const out = ['<svg class="placement" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + " " + H + '">'];
  P.nodes.forEach((n, i) => {
    const x = (i % perRow) * (nodeW + 10), y = Math.floor(i / perRow) * (nodeH + 10);
    out.push('<g class="node"><rect class="nodebox" x="' + x + '" y="' + y + '" width="' + nodeW + '" height="' +
      nodeH + '" rx="4"/><text class="nodelabel" x="' + (x + pad) + '" y="' + (y + 11) + '">node ' + i + " · " +
      esc(n[0]) + "</text>");
    for (let k = 0; k < n[2]; k++) {
      const id = n[1] + k, d = P.devices[id], gx = x + pad + k * (cell + gap), gy = y + 15;
      out.push('<g class="gpu" data-device="' + id + '"><title>gpu ' + id + " · " + esc(P.gpu_types[d[0]]) +
        " · stage " + d[1] + " · dp " + d[2] + " · tp " + d[3] + '</title><rect x="' + gx + '" y="' + gy +
        '" width="' + cell + '" height="' + cell + '" rx="3" fill="' + colour(d) + '"/><text x="' + (gx + cell / 2) +
        '" y="' + (gy + cell / 2 + 4) + '">' + d[1] + "</text></g>");
    }
    out.push("</g>");
  });
  out.push("</svg>");
  const legend = P.gpu_types.map((t, i) => '<span class="key"><i style="background:' +
    TYPE_COLORS[i % TYPE_COLORS.length] + '"></i>' + esc(t) + "</span>").join("");
  $("placement").innerHTML = '<div class="legend">' + (by === "type" ? legend : "colour = " +
    (by === "stage" ? "pipeline stage" : "data-parallel replica")) + " · the number in each GPU is its pipeline stage; hover for stage, dp and tp rank</div>" + out.join("");
}

// ---- Gantt ----------------------------------------------------------------------------------------------------
const G = {zoom: 1, replica: 0};
function ganttRows() {
  const T = D.timeline, rows = [];
  if (T.rows === "device") {
    for (const w of T.workers) w.devices.forEach((dev, j) => rows.push({w, label: "gpu " + dev + " · s" + w.stage +
      " dp" + w.dp + " tp" + j, device: dev}));
    rows.sort((a, b) => a.device - b.device);
  } else {
    for (const w of T.workers) if (w.dp === G.replica) rows.push({w, label: "stage " + w.stage + " · " + w.gpu, device: -1});
  }
  return rows;
}
// More boxes than this in view: boxes closer than a pixel are merged (coloured by the op taking most of their
// time); zooming in (only the scrolled-to part and one screen each side is drawn) shows every op again.
const DENSE_BOXES = 60000;
function renderGantt() {
  const T = D.timeline, rows = ganttRows(), labelW = 170, rowH = 24, top = 22, g = $("gantt");
  const width = Math.round(Math.max(500, g.clientWidth - labelW - 14) * G.zoom), scale = width / T.makespan_ticks;
  const H = top + rows.length * rowH + 4;
  const t0 = G.zoom > 1 ? (g.scrollLeft - labelW - g.clientWidth) / scale : -1;
  const t1 = G.zoom > 1 ? (g.scrollLeft + 2 * g.clientWidth) / scale : Infinity;
  let inView = 0;
  for (const r of rows) for (const a of [r.w.compute, r.w.comm])
    for (let k = 0; k < a.length; k += 5) if (a[k] <= t1 && a[k] + a[k + 1] >= t0) inView++;
  const dense = inView > DENSE_BOXES;
  const out = ['<svg class="gantt" width="' + (labelW + width + 10) + '" height="' + H + '">'];
  // Time axis: ~10 ticks at round values.
  const total = T.makespan_ticks * T.tick_s, raw = total / (10 * G.zoom), p = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((k) => k * p).find((s) => s >= raw);
  for (let t = 0; t <= total + 1e-12; t += step) {
    const x = labelW + (t / T.tick_s) * scale;
    out.push('<line class="grid" x1="' + x + '" x2="' + x + '" y1="' + (top - 4) + '" y2="' + H + '"/><text class="axis" x="' +
      x + '" y="12">' + fmtS(t) + "</text>");
  }
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    out.push('<g class="gantt-row" data-stage="' + r.w.stage + '" data-dp="' + r.w.dp + '" data-device="' + r.device +
      '" data-worker="' + r.w.worker + '"><text class="rowlabel" x="4" y="' + (y + 14) + '">' + esc(r.label) + "</text>");
    const lane = (arr, lane2, yy, hh) => {
      let run = null;
      const box = (x, w, c, k, n) => out.push('<rect class="t ' + c + (lane2 ? " lane2" : "") + '" x="' + x.toFixed(2) +
        '" y="' + yy + '" width="' + w.toFixed(2) + '" height="' + hh + '" data-w="' + r.w.worker + '" data-k="' + k +
        '" data-l="' + (lane2 ? 1 : 0) + '"' + (n > 1 ? ' data-n="' + n + '"' : "") + "/>");
      const flush = () => {
        if (!run) return;
        const c = Object.keys(run.t).reduce((a, b) => (run.t[a] >= run.t[b] ? a : b));
        box(run.x0, run.x1 - run.x0, c, run.k, run.n);
        run = null;
      };
      for (let k = 0; k < arr.length; k += 5) {
        if (arr[k] > t1 || arr[k] + arr[k + 1] < t0) continue;
        const x = labelW + arr[k] * scale, w = Math.max(0.4, arr[k + 1] * scale), c = lane2 ? "comm" : TAG_CLASS[arr[k + 2]];
        if (!dense) { box(x, w, c, k, 1); continue; }
        if (run && x <= run.x1 + 1) {
          run.x1 = Math.max(run.x1, x + w);
          run.t[c] = (run.t[c] || 0) + arr[k + 1];
          run.n++;
        } else {
          flush();
          run = {x0: x, x1: x + w, t: {[c]: arr[k + 1]}, n: 1, k};
        }
      }
      flush();
    };
    lane(r.w.compute, false, y + 2, 14);
    lane(r.w.comm, true, y + 17, 5);
    out.push("</g>");
  });
  out.push("</svg>");
  g.innerHTML = out.join("");
  $("gantt-mode").textContent = dense ? " Dense view: boxes closer than a pixel are merged (coloured by the op taking most of their time); zoom in to see every op." : "";
}
function ganttTip(ev) {
  const el = ev.target, tip = $("tip");
  if (!el.dataset || el.dataset.w === undefined) { tip.hidden = true; return; }
  const T = D.timeline, w = T.workers.find((x) => x.worker === +el.dataset.w);
  const a = +el.dataset.l ? w.comm : w.compute, k = +el.dataset.k;
  if (el.dataset.n) {
    tip.innerHTML = "<b>" + el.dataset.n + " ops merged</b> (narrower than a pixel; zoom in to see each)<br>from " +
      fmtS(a[k] * T.tick_s) + " · stage " + w.stage + " · dp replica " + w.dp;
    tip.style.left = ev.pageX + 12 + "px";
    tip.style.top = ev.pageY + 12 + "px";
    tip.hidden = false;
    return;
  }
  const what = TAG_WORDS[a[k + 2]], mb = a[k + 3], ch = a[k + 4];
  tip.innerHTML = "<b>" + esc(what) + "</b><br>" + (a[k + 2] === 4 ? "batch " + mb : "micro-batch " + mb + " · chunk " + ch) +
    "<br>duration " + fmtS(a[k + 1] * T.tick_s) + " · starts at " + fmtS(a[k] * T.tick_s) + "<br>stage " + w.stage +
    " · dp replica " + w.dp + " · gpus " + w.devices.join(",");
  tip.style.left = ev.pageX + 12 + "px";
  tip.style.top = ev.pageY + 12 + "px";
  tip.hidden = false;
}
function setupGantt() {
  const T = D.timeline, sel = $("replica");
  if (T.rows === "stage") {
    for (let d = 0; d < T.replicas_included; d++) sel.insertAdjacentHTML("beforeend", '<option value="' + d + '">dp replica ' + d + "</option>");
    sel.onchange = () => { G.replica = +sel.value; renderGantt(); };
  } else sel.hidden = true;
  $("zoom-in").onclick = () => { G.zoom = Math.min(G.zoom * 2, 256); renderGantt(); };
  $("zoom-out").onclick = () => { G.zoom = Math.max(G.zoom / 2, 1); renderGantt(); };
  $("zoom-fit").onclick = () => { G.zoom = 1; renderGantt(); };
  $("gantt").addEventListener("wheel", (ev) => {
    if (!ev.ctrlKey) return;
    ev.preventDefault();
    G.zoom = Math.min(256, Math.max(1, G.zoom * (ev.deltaY < 0 ? 1.5 : 1 / 1.5)));
    renderGantt();
  }, {passive: false});
  $("gantt").addEventListener("mousemove", ganttTip);
  $("gantt").addEventListener("scroll", () => {  // zoomed in: draw the part scrolled to
    if (G.zoom === 1) return;
    clearTimeout(G.timer);
    G.timer = setTimeout(renderGantt, 120);
  });
  $("gantt").addEventListener("mouseleave", () => { $("tip").hidden = true; });
  const note = T.rows === "device" ? "one row per GPU (the GPUs of a tp group run in lockstep)"
    : "one row per pipeline stage (" + D.summary.devices + " GPUs: choose the data-parallel replica)";
  $("gantt-note").textContent = note + "; simulated iteration " + T.iteration_time_text + ", mean bubble " +
    (100 * T.bubble_fraction).toFixed(1) + " %. " + (T.comm_lane ? "Thin lane under each row: sends and DP collectives." : "Communication streams left out (too many tasks for one page).") + " Ctrl+wheel or the buttons zoom; hover a box for its op.";
}
)JS"
                                      R"JS(
// ---- memory ---------------------------------------------------------------------------------------------------
function renderMemory() {
  const T = D.timeline, M = T.memory, L = 60, W = Math.max(500, $("memory-chart").clientWidth - L - 24), H = 260, top = 10;
  const maxB = Math.max(...M.map((s) => Math.max(s.capacity_bytes, s.peak_bytes))) * 1.05;
  const x = (t) => L + (t / T.makespan_ticks) * W, y = (b) => top + H - (b / maxB) * H;
  const out = ['<svg class="memchart" width="' + (L + W + 20) + '" height="' + (H + 40) + '">'];
  for (let i = 0; i <= 4; i++) {
    const b = (maxB * i) / 4;
    out.push('<line class="grid" x1="' + L + '" x2="' + (L + W) + '" y1="' + y(b) + '" y2="' + y(b) + '"/><text class="axis" x="2" y="' +
      (y(b) + 4) + '">' + fmtB(b) + "</text>");
  }
  const caps = [...new Set(M.map((s) => s.capacity_bytes))];
  for (const c of caps) out.push('<line class="capacity" x1="' + L + '" x2="' + (L + W) + '" y1="' + y(c) + '" y2="' + y(c) +
    '"/><text class="axis" x="' + (L + W - 150) + '" y="' + (y(c) - 4) + '">capacity ' + fmtB(c) + "</text>");
  M.forEach((s, i) => {
    const pts = [];
    if (s.points.length / 2 <= W / 4) {  // exact step curve (at least 4 pixels per change on average)
      let last = null;
      for (let k = 0; k < s.points.length; k += 2) {
        if (last !== null) pts.push(x(s.points[k]).toFixed(1) + "," + y(last).toFixed(1));
        pts.push(x(s.points[k]).toFixed(1) + "," + y(s.points[k + 1]).toFixed(1));
        last = s.points[k + 1];
      }
    } else {  // denser than the chart: the upper envelope over 4-pixel columns (keeps the peak)
      const C = Math.ceil(W / 4), top = new Array(C + 1).fill(-1), end = new Array(C + 1).fill(-1);
      for (let k = 0; k < s.points.length; k += 2) {
        const c = Math.min(C, Math.max(0, Math.round((x(s.points[k]) - L) / 4)));
        top[c] = Math.max(top[c], s.points[k + 1]);
        end[c] = s.points[k + 1];
      }
      let carry = 0;
      for (let c = 0; c <= C; c++) {
        const v = Math.max(carry, top[c]);  // the value held when the column starts counts too
        if (end[c] >= 0) carry = end[c];
        pts.push((L + 4 * c) + "," + y(v).toFixed(1));
      }
    }
    out.push('<polyline class="memline" data-stage="' + s.stage + '" stroke="' + hue(i, M.length) + '" points="' + pts.join(" ") +
      '"><title>stage ' + s.stage + " (" + esc(s.gpu) + "): peak " + esc(s.peak_text) + "</title></polyline>");
    out.push('<circle cx="' + x(s.peak_time_ticks) + '" cy="' + y(s.peak_bytes) + '" r="3" fill="' + hue(i, M.length) + '"/>');
  });
  out.push("</svg>");
  const parts = ["weights", "gradients", "optimizer", "activations", "buffers"];
  let t = '<table class="tbl"><tr><th>stage</th><th>GPU</th><th>peak (simulated)</th><th>of capacity</th><th>breakdown at the peak</th></tr>';
  for (const s of M) {
    const bar = parts.map((p) => '<i class="seg m-' + p + '" style="width:' + (100 * s.breakdown[p] / s.capacity_bytes).toFixed(2) +
      '%" title="' + p + " " + fmtB(s.breakdown[p]) + '"></i>').join("");
    t += '<tr><td><i class="dot" style="background:' + hue(s.stage, M.length) + '"></i>' + s.stage + "</td><td>" + esc(s.gpu) +
      '</td><td class="stage-peak" data-stage="' + s.stage + '" data-value="' + s.peak_bytes + '">' + fmtB(s.peak_bytes) +
      "</td><td>" + (100 * s.peak_bytes / s.capacity_bytes).toFixed(0) + ' %</td><td><div class="membar">' + bar + "</div>" +
      parts.map((p) => p + " " + fmtB(s.breakdown[p])).join(" · ") + "</td></tr>";
  }
  t += "</table>";
  $("memory-chart").innerHTML = out.join("");
  $("memory-table").innerHTML = '<p>Highest peak: <b id="memory-peak" data-value="' + T.peak_memory_bytes + '">' +
    esc(T.peak_memory_text) + "</b> (simulated; dots mark each stage's peak, dashed lines the capacity; a curve denser than the chart is drawn as its upper envelope over 4-pixel columns).</p>" + t;
}

// ---- per-stage breakdown --------------------------------------------------------------------------------------
function renderStages() {
  const S = D.stages, parts = [["compute_s", "compute"], ["tp_s", "TP comm"], ["p2p_s", "p2p"], ["dp_s", "DP comm"],
    ["optimizer_s", "optimizer"], ["bubble_s", "bubble"]];
  const tot = (r) => parts.reduce((a, p) => a + r[p[0]], 0);
  const maxT = Math.max(S.iteration_time_s, ...S.rows.map(tot));
  let h = '<p class="bottleneck" id="bottleneck">' + esc(S.bottleneck) + ".</p><div class=\"legend\">" +
    parts.map((p) => '<span class="key"><i class="b-' + p[0] + '"></i>' + p[1] + "</span>").join("") +
    " · per iteration; the line marks the predicted iteration time " + fmtS(S.iteration_time_s) + '</div><div class="bars">';
  for (const r of S.rows) {
    h += '<div class="barrow' + (r.stage === S.bottleneck_stage ? " hot" : "") + '" data-stage="' + r.stage + '"><span class="barlabel">stage ' +
      r.stage + " · " + esc(r.gpu) + " · " + r.layers + ' layers</span><span class="bar">' + parts.map((p) =>
        '<i class="b-' + p[0] + '" style="width:' + (100 * r[p[0]] / maxT).toFixed(3) + '%" title="' + p[1] + " " + fmtS(r[p[0]]) +
        '"></i>').join("") + '<b class="mark" style="left:' + (100 * S.iteration_time_s / maxT).toFixed(3) + '%"></b></span></div>';
  }
  $("stage-bars").innerHTML = h + "</div>";
}

// ---- why this plan --------------------------------------------------------------------------------------------
function table(head, rows, codeCol) {
  return '<table class="tbl"><tr>' + head.map((x) => "<th>" + esc(x) + "</th>").join("") + "</tr>" +
    rows.map((r) => "<tr>" + r.map((x, i) => (i === codeCol ? '<td class="code">' : "<td>") + esc(x) + "</td>").join("") +
      "</tr>").join("") + "</table>";
}
function renderWhy() {
  const Y = D.why, S = Y.sensitivity;
  let h = "<h3>The planner's reasoning</h3><ul>" + Y.explanation.map((l) => "<li>" + esc(l) + "</li>").join("") + "</ul>";
  h += "<h3>Top plans</h3>" + table(["#", "time/iter", "TFLOP/s/GPU", "peak memory", "vs best", "GPU types", "strategy"],
    Y.top.map((r, i) => [i + 1, r.time, r.tflops, r.memory, r.vs_best, r.placement, r.cli]), 6);
  h += "<h3>Baselines and why each loses</h3>" + table(["baseline", "time/iter", "best is faster by", "why it loses", "how it was chosen"],
    Y.baselines.map((b) => [b.name, b.time, b.speedup, b.reason, b.note]));
  h += "<h3>Sensitivity</h3><ul>" + S.verdicts.map((v) => "<li>" + esc(v) + "</li>").join("") + "</ul>";
  h += table(["plan"].concat(S.scenarios.map((s) => s + " (rank)")), S.rows.map((r) => [r.name].concat(r.times.map((t, k) => t + " (#" + r.ranks[k] + ")"))), -1);
  $("why-body").innerHTML = h;
}

renderSummary();
$("place-colour").onchange = renderPlacement;
renderPlacement();
setupGantt();
renderGantt();
renderMemory();
renderStages();
renderWhy();
document.body.dataset.renderMs = String(Math.round(performance.now()));  // navigation start → drawn (bench)
document.body.dataset.rendered = "1";
)JS";

}  // namespace

std::string_view report_script() { return kScript; }

}  // namespace strata::report::detail
