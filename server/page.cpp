// server/page.cpp — the what-if page (see the header): markup and styles, then the script that reads
// /api/scenarios and /api/profiles once, turns the controls into a request {"scenario", "set"} (only the
// values the user changed from the scenario's), asks POST /api/report 150 ms after the last change
// (aborting the one in flight), and draws the answer; the node ladder (POST /api/report with "scaling")
// follows it. Errors go next to the control they are about: the API's "field", else the last one changed.
// For tests the page keeps its state in window.ptsim and says "idle"/"busy"/"error" in body[data-status].
#include "server/page.hpp"

#include <string_view>

namespace ptsim::server {

namespace {

constexpr std::string_view kHead = R"page(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ptsim — what if?</title>
<style>
:root { --ink:#1d2430; --muted:#5b6770; --rule:#d9dee3; --paper:#fff; --wash:#f2f4f7; --accent:#0072B2;
  --bad:#b3261e; --good:#1b7f4c; --warn:#9a6700; }
* { box-sizing:border-box; }
body { margin:0; background:var(--wash); color:var(--ink);
  font:14.5px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", sans-serif; }
header.top { background:#1d2430; color:#fff; padding:14px 24px; display:flex; align-items:center; gap:24px; flex-wrap:wrap; }
header.top h1 { margin:0; font-size:20px; font-weight:650; letter-spacing:-0.01em; white-space:nowrap; }
header.top h1 span { color:#8fb8de; font-weight:500; }
header.top .pick { display:flex; align-items:center; gap:10px; flex:1; min-width:320px; }
header.top select { font:inherit; font-size:15px; padding:6px 10px; border-radius:6px; border:1px solid #3c4756;
  background:#27303d; color:#fff; max-width:360px; }
header.top .desc { color:#c9d1d9; font-size:13px; flex:1; min-width:240px; }
#status { font-size:12.5px; color:#c9d1d9; white-space:nowrap; }
#status.busy::before { content:""; display:inline-block; width:8px; height:8px; border-radius:50%; background:#E69F00;
  margin-right:6px; animation:pulse 0.8s infinite alternate; }
@keyframes pulse { from { opacity:0.3; } to { opacity:1; } }
.layout { display:grid; grid-template-columns:330px 1fr; gap:18px; padding:18px 24px 30px; max-width:1500px; margin:0 auto; }
@media (max-width:900px) { .layout { grid-template-columns:1fr; } }
aside .card, main .card { background:var(--paper); border:1px solid var(--rule); border-radius:10px; padding:14px 16px; margin-bottom:14px; }
.card h2 { margin:0 0 10px; font-size:13px; text-transform:uppercase; letter-spacing:0.06em; color:var(--muted); font-weight:650; }
.ctl { margin:0 0 10px; }
.ctl label { display:block; font-size:13px; color:#36414c; margin-bottom:3px; font-weight:550; }
.ctl label .hint { color:var(--muted); font-weight:400; }
.ctl select, .ctl input { font:inherit; width:100%; padding:6px 8px; border:1px solid #c3cad1; border-radius:6px; background:#fff; color:var(--ink); }
.ctl input[type=number] { font-variant-numeric:tabular-nums; }
.ctl.changed select, .ctl.changed input { border-color:var(--accent); box-shadow:0 0 0 1px var(--accent) inset; }
.ctl.bad select, .ctl.bad input { border-color:var(--bad); box-shadow:0 0 0 1px var(--bad) inset; background:#fdf3f2; }
.row { display:flex; gap:6px; align-items:center; }
.row input { flex:1; }
.row button { font:inherit; padding:5px 10px; border:1px solid #c3cad1; background:#fff; border-radius:6px; cursor:pointer; }
.row button:hover { background:var(--wash); }
.phase { border-top:1px dashed var(--rule); padding-top:8px; margin-top:8px; }
.phase .pname { font-size:12.5px; color:var(--muted); margin-bottom:4px; }
.phase .two { display:grid; grid-template-columns:1fr 1fr; gap:0 8px; }
.phase .two .ctl.bad { grid-column:1 / -1; }
.err { display:none; margin-top:5px; padding:7px 9px; border-radius:6px; background:#fdf3f2; border:1px solid #f0c4c0;
  color:var(--bad); font-size:12.5px; white-space:pre-wrap; word-break:break-word; }
.bad > .err, .err.show { display:block; }
#global-error { margin-bottom:14px; }
button.primary { font:inherit; font-weight:600; padding:7px 14px; border-radius:6px; border:1px solid var(--accent);
  background:var(--accent); color:#fff; cursor:pointer; }
button.secondary { font:inherit; padding:7px 14px; border-radius:6px; border:1px solid #c3cad1; background:#fff; cursor:pointer; }
button:disabled { opacity:0.5; cursor:default; }
.compare-note { font-size:12.5px; color:var(--muted); margin-top:8px; }
.figures { display:grid; grid-template-columns:repeat(auto-fit, minmax(155px, 1fr)); gap:10px; margin-bottom:14px; }
.figure { background:var(--paper); border:1px solid var(--rule); border-radius:10px; padding:12px 14px; position:relative; }
.figure.main { border-color:#9cc3e3; background:linear-gradient(180deg, #f3f8fd, #fff); }
.figure .label { color:var(--muted); font-size:11.5px; text-transform:uppercase; letter-spacing:0.05em; }
.figure .value { font-size:22px; font-weight:680; font-variant-numeric:tabular-nums; margin-top:2px; white-space:nowrap; }
.figure .sub { color:var(--muted); font-size:12px; min-height:16px; }
.delta { font-size:12.5px; font-weight:600; font-variant-numeric:tabular-nums; min-height:18px; }
.delta.better { color:var(--good); } .delta.worse { color:var(--bad); } .delta.same { color:var(--muted); }
.stale .figure .value, .stale canvas { opacity:0.35; }
.charts { display:grid; grid-template-columns:1.35fr 1fr; gap:14px; }
@media (max-width:1200px) { .charts { grid-template-columns:1fr; } }
.chart h3 { margin:0 0 2px; font-size:15px; font-weight:630; }
.chart .how { margin:0 0 8px; color:var(--muted); font-size:12.5px; }
.canvasbox { position:relative; height:260px; }
.pending { position:absolute; inset:0; display:flex; align-items:center; justify-content:center; color:var(--muted); font-size:13px; }
.pending.hidden { display:none; }
.cmd { font-family:ui-monospace, "DejaVu Sans Mono", monospace; font-size:12px; background:var(--wash); border-radius:6px;
  padding:8px 10px; color:#36414c; word-break:break-all; }
.nocharts { color:var(--warn); font-size:13px; }
footer { color:var(--muted); font-size:12px; padding:0 24px 24px; max-width:1500px; margin:0 auto; }
</style>
</head>
<body data-status="loading">
<header class="top">
  <h1>ptsim <span>what if?</span></h1>
  <div class="pick"><select id="scenario" aria-label="scenario"></select><div class="desc" id="scenario-desc"></div></div>
  <div id="status">loading…</div>
</header>
<div class="layout">
<aside>
  <div class="card">
    <h2>Cluster</h2>
    <div class="ctl" data-key="cluster.node"><label for="node">Node type <span class="hint" id="node-hint"></span></label>
      <select id="node"></select><div class="err"></div></div>
    <div class="ctl" data-key="cluster.nodes"><label for="nodes">Nodes <span class="hint" id="gpus-hint"></span></label>
      <div class="row"><button type="button" id="nodes-half" title="half as many">÷2</button><input id="nodes" type="number" min="1" max="100000" step="1">
      <button type="button" id="nodes-double" title="twice as many">×2</button></div><div class="err"></div></div>
    <div class="ctl" data-key="cluster.network"><label for="network">Network between nodes</label>
      <select id="network"></select><div class="err"></div></div>
  </div>
  <div class="card">
    <h2>Recipe</h2>
    <div class="ctl" data-key="recipe.precision"><label for="precision">Precision</label>
      <select id="precision"><option value="fp32">fp32</option><option value="tf32">tf32 (A100 and later)</option>
      <option value="fp16">fp16 (mixed, loss scaling)</option><option value="bf16">bf16 (mixed)</option>
      <option value="fp8">fp8 (Transformer Engine; H100/H200)</option></select><div class="err"></div></div>
    <div id="phases"></div>
  </div>
  <div class="card">
    <h2>Prices</h2>
    <div class="ctl" data-key="prices.rental"><label for="rental">Rental (on demand / reserved)</label>
      <select id="rental"></select><div class="err"></div></div>
    <div class="ctl" data-key="prices.spot"><label for="spot">Spot</label><select id="spot"></select><div class="err"></div></div>
    <div class="ctl" data-key="prices.purchase"><label for="purchase">Purchase (ownership)</label>
      <select id="purchase"></select><div class="err"></div></div>
  </div>
  <div class="card">
    <h2>Compare</h2>
    <div class="row"><button type="button" class="primary" id="pin">Pin this configuration</button>
      <button type="button" class="secondary" id="unpin" disabled>Unpin</button></div>
    <div class="compare-note" id="compare-note">Pin a configuration, change the controls, and every figure shows the difference.</div>
  </div>
  <div class="card">
    <h2>Same prediction on the command line</h2>
    <div class="cmd" id="cmd"></div>
  </div>
</aside>
<main>
  <div class="err" id="global-error"></div>
  <div id="results">
  <div class="figures">
    <div class="figure main"><div class="label">Time to train</div><div class="value" id="f-time">–</div>
      <div class="delta" id="d-time"></div><div class="sub" id="s-time"></div></div>
    <div class="figure"><div class="label">Rental</div><div class="value" id="f-rental">–</div>
      <div class="delta" id="d-rental"></div><div class="sub" id="s-rental"></div></div>
    <div class="figure"><div class="label">Spot</div><div class="value" id="f-spot">–</div>
      <div class="delta" id="d-spot"></div><div class="sub" id="s-spot"></div></div>
    <div class="figure"><div class="label">Ownership</div><div class="value" id="f-own">–</div>
      <div class="delta" id="d-own"></div><div class="sub" id="s-own"></div></div>
    <div class="figure"><div class="label">Scaling efficiency</div><div class="value" id="f-eff">–</div>
      <div class="delta" id="d-eff"></div><div class="sub">vs one GPU at the same micro-batch</div></div>
    <div class="figure"><div class="label">TFLOP/s per GPU</div><div class="value" id="f-tflops">–</div>
      <div class="delta" id="d-tflops"></div><div class="sub" id="s-mem"></div></div>
  </div>
  <div class="charts">
    <div class="card chart"><h3>Where one optimizer step's time goes</h3>
      <p class="how">Each bar is one training phase's step: compute by kind of op, then the communication the
      backward pass could not hide. Shorter is faster; a long red end means the network is the bottleneck.</p>
      <div class="canvasbox"><canvas id="chart-step" role="img" aria-label="step time split"></canvas></div></div>
    <div class="card chart"><h3>What the run costs</h3>
      <p class="how">Renting on demand, on spot (with the pre-emption overhead), and owning the cluster (purchase
      amortised, plus energy), for this run's time to train.</p>
      <div class="canvasbox"><canvas id="chart-cost" role="img" aria-label="cost"></canvas></div></div>
    <div class="card chart"><h3>Time to train as the cluster grows</h3>
      <p class="how">The same scenario on 1, 2, 4, … nodes (this configuration's count marked). Bars: days;
      line: scaling efficiency. Where the line falls, more nodes buy less.</p>
      <div class="canvasbox"><canvas id="chart-scaling" role="img" aria-label="scaling"></canvas>
      <div class="pending" id="scaling-pending">running the node ladder…</div></div></div>
    <div class="card chart"><h3>Memory per GPU</h3>
      <p class="how">The largest phase's memory by category against the GPU's memory (the line).</p>
      <div class="canvasbox"><canvas id="chart-memory" role="img" aria-label="memory"></canvas></div></div>
  </div>
  </div>
</main>
</div>
<footer>ptsim serve — every figure comes from the simulator behind <code>POST /api/report</code>; nothing on this
page is fetched from anywhere but this server. Prices are the shipped price items with their dates and sources
(<code>ptsim profiles list</code>).</footer>
<script>
)page";

constexpr std::string_view kNoCharts = R"page(window.Chart = undefined;
)page";

constexpr std::string_view kScript = R"page(
</script>
<script>
(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  var state = { scenarios: [], profiles: null, scenario: null, base: {}, last: null, lastScaling: null,
                pinned: null, lastChanged: null, seq: 0, done: 0, error: null, timer: null, scalingTimer: null,
                inflight: null, scalingInflight: null };
  window.ptsim = state;
  var hasCharts = typeof Chart !== 'undefined';
  var charts = {};
  var PART_COLOURS = {
    'GEMM (dense layers)': '#0072B2', 'attention batched GEMM': '#56B4E9', 'softmax': '#009E73',
    'layer norm': '#7fc8a9', 'dropout': '#b9d7a8', 'GELU / tanh': '#E69F00', 'embedding': '#f3c979',
    'loss (cross-entropy)': '#CC79A7', 'other elementwise (add, bias grad, reshapes, gathers)': '#a8b3bd',
    'optimizer': '#5B6770', 'tensor-parallel all-reduce (blocking)': '#F0A35E', 'exposed gradient communication': '#D55E00' };

  // ---- formatting ----
  function num(v, d) { return Number(v).toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }); }
  function duration(s) {
    if (s == null || !isFinite(s)) return '–';
    if (s >= 2 * 86400) return num(s / 86400, 2) + ' days';
    if (s >= 2 * 3600) return num(s / 3600, 1) + ' h';
    if (s >= 120) return num(s / 60, 1) + ' min';
    if (s >= 1) return num(s, 2) + ' s';
    return num(s * 1e3, 1) + ' ms';
  }
  function usd(v) {
    if (v == null || !isFinite(v)) return '–';
    var a = Math.abs(v);
    if (a >= 1e6) return '$' + num(v / 1e6, 2) + 'M';
    return '$' + num(v, a < 100 ? 2 : 0);
  }
  function pct(f) { return f == null ? '–' : num(100 * f, 1) + '%'; }
  function gib(b) { return num(b / 1073741824, 1) + ' GiB'; }
  function shortUsd(v) { var a = Math.abs(v); return a >= 1e6 ? '$' + num(v / 1e6, 1) + 'M' : a >= 1e3 ? '$' + num(v / 1e3, 0) + 'k' : '$' + num(v, 0); }

  // ---- API ----
  function getJson(path) { return fetch(path).then(function (r) { return r.json(); }); }
  function postJson(path, body, signal) {
    return fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body), signal: signal })
      .then(function (r) { return r.json().then(function (j) { return { status: r.status, body: j }; }); });
  }

  // ---- controls ----
  function option(select, value, text) {
    var o = document.createElement('option'); o.value = value; o.textContent = text; select.appendChild(o);
  }
  function nodeProfile(name) { return state.profiles.nodes.find(function (n) { return n.name === name; }); }
  function gpuProfile(name) { return state.profiles.gpus.find(function (g) { return g.name === name; }); }
  function pricesFor(kinds, node) {
    var n = nodeProfile(node);
    return state.profiles.prices.filter(function (p) {
      return kinds.indexOf(p.kind) >= 0 && (p.applies_to === node || (n && p.applies_to === n.gpu));
    });
  }
  function priceLabel(p) {
    var unit = p.unit === 'gpu_hour' ? '/GPU-h' : p.unit === 'instance_hour' ? '/node-h' : '';
    return usd(p.usd) + unit + ' · ' + p.name + (p.date ? ' (' + p.date + ')' : '');
  }
  // The price items that apply to `node`; a chosen item that does not apply any more (the node changed)
  // gives way to the first that does (`repick`), or to none.
  function fillPrices(node, chosen, repick) {
    var sc = state.scenario, bySet = sc.prices.set ? 'chosen by the price set ' + sc.prices.set : '';
    [['rental', ['on_demand', 'reserved'], bySet || 'no rental price'],
     ['spot', ['spot'], bySet || 'no spot price'],
     ['purchase', ['purchase'], bySet || "the node's listed purchase price"]].forEach(function (spec) {
      var select = $(spec[0]); select.innerHTML = '';
      option(select, '', spec[2]);
      pricesFor(spec[1], node).forEach(function (p) { option(select, p.name, priceLabel(p)); });
      var want = chosen[spec[0]];
      var present = Array.prototype.some.call(select.options, function (o) { return o.value === want; });
      select.value = present ? want : '';
      if (!present && want && repick && select.options.length > 1) select.selectedIndex = 1;
    });
  }
  function phaseControls(sc) {
    var box = $('phases'); box.innerHTML = '';
    sc.phases.forEach(function (ph, i) {
      var div = document.createElement('div'); div.className = 'phase';
      div.innerHTML = '<div class="pname">' + (sc.phases.length > 1 ? 'Phase ' + (i + 1) + ': ' : '') + escapeHtml(ph.name) +
        ' · seq ' + ph.seq_len + '</div><div class="two">' +
        '<div class="ctl" data-key="phases.' + i + '.micro_batch"><label for="mb' + i + '">Micro-batch</label>' +
        '<input id="mb' + i + '" type="number" min="1" max="1048576" step="1"><div class="err"></div></div>' +
        '<div class="ctl" data-key="phases.' + i + '.grad_accum"><label for="ga' + i + '">Accumulation</label>' +
        '<input id="ga' + i + '" type="number" min="1" max="1048576" step="1"><div class="err"></div></div></div>';
      box.appendChild(div);
    });
  }
  function escapeHtml(t) { return String(t).replace(/[&<>"']/g, function (c) { return '&#' + c.charCodeAt(0) + ';'; }); }

  // Every control: [key, element id, how to read it]. Values equal to the scenario's are not sent.
  function controls() {
    var list = [['cluster.node', 'node', String], ['cluster.nodes', 'nodes', Number], ['cluster.network', 'network', String],
                ['recipe.precision', 'precision', String], ['prices.rental', 'rental', String],
                ['prices.spot', 'spot', String], ['prices.purchase', 'purchase', String]];
    state.scenario.phases.forEach(function (ph, i) {
      list.push(['phases.' + i + '.micro_batch', 'mb' + i, Number]);
      list.push(['phases.' + i + '.grad_accum', 'ga' + i, Number]);
    });
    return list;
  }
  function currentSet() {
    var set = {};
    controls().forEach(function (c) {
      var el = $(c[1]); if (!el) return;
      var raw = el.value, value = c[2] === Number ? (raw === '' ? raw : Number(raw)) : raw;
      if (c[2] === Number && raw !== '' && !Number.isInteger(value)) value = raw;  // the simulator names it
      var ctl = el.closest('.ctl');
      var changed = String(value) !== String(state.base[c[0]]);
      ctl.classList.toggle('changed', changed);
      if (changed) set[c[0]] = value;
    });
    return set;
  }
  function request() { return { scenario: state.scenario.name, set: currentSet() }; }

  function loadScenario(name) {
    var sc = state.scenarios.find(function (s) { return s.name === name; });
    state.scenario = sc; state.base = {}; state.last = null; state.lastScaling = null;
    $('scenario-desc').textContent = sc.description;
    $('node').value = sc.node; $('nodes').value = sc.nodes; $('network').value = sc.network;
    $('precision').value = sc.precision;
    fillPrices(sc.node, sc.prices, false);
    phaseControls(sc);
    // The scenario's own values; an accumulation it derives (0) is filled in from its first prediction.
    state.base = { 'cluster.node': sc.node, 'cluster.nodes': sc.nodes, 'cluster.network': sc.network,
                   'recipe.precision': sc.precision, 'prices.rental': sc.prices.rental, 'prices.spot': sc.prices.spot,
                   'prices.purchase': sc.prices.purchase };
    state.derived = [];
    sc.phases.forEach(function (ph, i) {
      state.base['phases.' + i + '.micro_batch'] = ph.micro_batch; $('mb' + i).value = ph.micro_batch;
      state.base['phases.' + i + '.grad_accum'] = ph.grad_accum || ''; $('ga' + i).value = ph.grad_accum || '';
      if (!ph.grad_accum) state.derived.push(i);
    });
    bindInputs();
    nodeHints();
    schedule(0);
  }
  function nodeHints() {
    var n = nodeProfile($('node').value);
    if (!n) return;
    var g = gpuProfile(n.gpu);
    $('node-hint').textContent = '· ' + n.gpus_per_node + ' × ' + n.gpu + (g ? ' (' + gib(g.memory_bytes) + ')' : '');
    var gpus = Number($('nodes').value) * (state.scenario.gpus_per_node || n.gpus_per_node);
    $('gpus-hint').textContent = isFinite(gpus) && gpus > 0 ? '· ' + gpus.toLocaleString('en-US') + ' GPUs' : '';
  }
  function bindInputs() {
    document.querySelectorAll('aside input, aside select').forEach(function (el) {
      if (el.dataset.bound) return;
      el.dataset.bound = '1';
      var handler = function () {
        state.lastChanged = el.closest('.ctl') ? el.closest('.ctl').dataset.key : null;
        if (el.id === 'node') fillPrices(el.value, { rental: $('rental').value, spot: $('spot').value, purchase: $('purchase').value }, true);
        nodeHints();
        schedule(150);
      };
      el.addEventListener(el.tagName === 'SELECT' ? 'change' : 'input', handler);
    });
  }

  // ---- requests ----
  function setStatus(s, text) { document.body.dataset.status = s; $('status').className = s; $('status').textContent = text; }
  function schedule(ms) {
    clearTimeout(state.timer);
    setStatus('busy', 'predicting…');
    state.timer = setTimeout(run, ms);
  }
  function run() {
    var seq = ++state.seq, body = request();
    if (state.inflight) state.inflight.abort();
    var ctrl = state.inflight = new AbortController();
    var started = performance.now();
    postJson('/api/report', body, ctrl.signal).then(function (answer) {
      if (seq !== state.seq) return;
      state.inflight = null;
      state.done = seq;
      if (answer.status !== 200) { showError(answer.body, body); return; }
      clearErrors();
      fillDerived(answer.body.prediction);
      state.last = { request: body, report: answer.body, prediction: answer.body.prediction };
      draw();
      setStatus('idle', 'updated in ' + Math.round(performance.now() - started) + ' ms');
      scheduleScaling(body);
    }).catch(function (e) {
      if (e.name === 'AbortError') return;
      if (seq !== state.seq) return;
      state.done = seq;
      showError({ error: 'the server did not answer: ' + e.message, field: null }, body);
    });
  }
  // Accumulation the scenario derives from its global batch: shown as the prediction ran it, and not sent
  // unless the user changes it.
  function fillDerived(prediction) {
    (state.derived || []).forEach(function (i) {
      var el = $('ga' + i), ph = prediction.phases[i];
      if (!el || !ph || el.value !== '') return;
      el.value = ph.grad_accum; state.base['phases.' + i + '.grad_accum'] = ph.grad_accum;
    });
    state.derived = [];
  }
  function scheduleScaling(body) {
    clearTimeout(state.scalingTimer);
    // The ladder on screen belongs to the previous configuration: say so until this one's arrives.
    state.lastScaling = null;
    $('scaling-pending').classList.remove('hidden');
    $('chart-scaling').style.opacity = 0.2;
    state.scalingTimer = setTimeout(function () {
      if (state.scalingInflight) state.scalingInflight.abort();
      var ctrl = state.scalingInflight = new AbortController();
      var req = { scenario: body.scenario, set: body.set, scaling: true };
      postJson('/api/report', req, ctrl.signal).then(function (answer) {
        if (answer.status !== 200 || !state.last || state.last.request !== body) return;
        state.lastScaling = answer.body.scaling;
        drawScaling();
      }).catch(function () {});
    }, 250);
  }

  // ---- errors ----
  function clearErrors() {
    document.querySelectorAll('.ctl.bad').forEach(function (c) { c.classList.remove('bad'); c.querySelector('.err').textContent = ''; });
    $('global-error').classList.remove('show'); $('global-error').textContent = '';
    $('results').classList.remove('stale');
    state.error = null;
  }
  function showError(err, body) {
    clearErrors();
    state.error = err;
    var key = err.field && err.field.indexOf('set.') === 0 ? err.field.slice(4) : null;
    if (!key && err.field !== 'scenario') key = state.lastChanged;
    var ctl = key ? document.querySelector('.ctl[data-key="' + key + '"]') : null;
    var text = err.error + (err.infeasible ? '' : '');
    if (ctl) {
      ctl.classList.add('bad'); ctl.querySelector('.err').textContent = text;
      err.shownAt = key;
    } else {
      $('global-error').textContent = text; $('global-error').classList.add('show');
      err.shownAt = 'global';
    }
    $('results').classList.add('stale');
    setStatus('error', err.infeasible ? 'cannot run: ' + err.infeasible : 'input error');
  }

  // ---- drawing ----
  function delta(id, now, then, lowerIsBetter, fmt) {
    var el = $(id);
    if (!state.pinned || now == null || then == null || !isFinite(now) || !isFinite(then) || then === 0) { el.textContent = ''; el.className = 'delta'; return; }
    var d = now - then, rel = d / Math.abs(then);
    if (Math.abs(rel) < 0.0005) { el.textContent = '= pinned'; el.className = 'delta same'; return; }
    var better = lowerIsBetter ? d < 0 : d > 0;
    el.textContent = (d > 0 ? '▲ ' : '▼ ') + (fmt ? fmt(Math.abs(d)) + ' · ' : '') + num(Math.abs(rel) * 100, 1) + '% vs pinned';
    el.className = 'delta ' + (better ? 'better' : 'worse');
  }
  function draw() {
    var r = state.last.report, p = r.prediction, c = r.cost, pin = state.pinned && state.pinned.report;
    var pp = pin && pin.prediction;
    $('f-time').textContent = duration(p.time_to_train_seconds);
    $('s-time').textContent = p.gpus.toLocaleString('en-US') + ' × ' + p.gpu + ' · ' + p.network;
    $('f-rental').textContent = usd(c.rental_usd);
    $('s-rental').textContent = c.rental_usd_per_hour ? usd(c.rental_usd_per_hour) + ' per cluster-hour' : 'no rental price chosen';
    $('f-spot').textContent = usd(c.spot_usd);
    $('s-spot').textContent = c.spot_usd != null ? 'incl. ' + pct(c.spot_preemption_overhead) + ' pre-emption overhead' : 'no spot price chosen';
    $('f-own').textContent = usd(c.ownership_usd);
    $('s-own').textContent = c.break_even_days != null ? 'buying beats renting after ' + num(c.break_even_days, 0) + ' days of use' :
      (c.ownership_usd != null ? 'amortised over ' + c.amortisation_years + ' years' : 'no purchase price known');
    $('f-eff').textContent = pct(p.scaling_efficiency);
    $('f-tflops').textContent = num(p.tflops_per_gpu, 1);
    var dev = r.memory.length ? r.memory[0].device_bytes : 0;
    $('s-mem').textContent = gib(p.memory_per_gpu_bytes) + ' of ' + gib(dev) + ' memory';
    delta('d-time', p.time_to_train_seconds, pp && pp.time_to_train_seconds, true, duration);
    delta('d-rental', c.rental_usd, pin && pin.cost.rental_usd, true, usd);
    delta('d-spot', c.spot_usd, pin && pin.cost.spot_usd, true, usd);
    delta('d-own', c.ownership_usd, pin && pin.cost.ownership_usd, true, usd);
    delta('d-eff', p.scaling_efficiency, pp && pp.scaling_efficiency, false);
    delta('d-tflops', p.tflops_per_gpu, pp && pp.tflops_per_gpu, false);
    $('cmd').textContent = commandLine(state.last.request);
    if (hasCharts) { drawStep(); drawCost(); drawMemory(); }
  }
  function commandLine(req) {
    var parts = ['ptsim predict --scenario ' + req.scenario];
    Object.keys(req.set).forEach(function (k) { parts.push('--set ' + k + '=' + req.set[k]); });
    return parts.join(' ');
  }
  function makeChart(id, config) {
    if (charts[id]) { charts[id].data = config.data; charts[id].options = config.options; charts[id].update('none'); return; }
    charts[id] = new Chart($(id), config);
  }
  function axisTicks(fmt) { return { callback: function (v) { return fmt(v); } }; }
  function drawStep() {
    var rows = [];
    var add = function (report, tag) { report.step_breakdown.forEach(function (s) { rows.push({ label: (tag ? tag + ' · ' : '') + s.phase, parts: s.parts, total: s.iteration_seconds }); }); };
    if (state.pinned) add(state.pinned.report, 'pinned');
    add(state.last.report, state.pinned ? 'now' : '');
    var names = [];
    rows.forEach(function (r) { r.parts.forEach(function (p) { if (names.indexOf(p.part) < 0) names.push(p.part); }); });
    var order = Object.keys(PART_COLOURS);
    names.sort(function (a, b) { return order.indexOf(a) - order.indexOf(b); });
    var datasets = names.map(function (n) {
      return { label: n, backgroundColor: PART_COLOURS[n] || '#999', borderWidth: 0, barPercentage: 0.7,
               data: rows.map(function (r) { var f = r.parts.find(function (p) { return p.part === n; }); return f ? f.seconds : 0; }) };
    });
    makeChart('chart-step', { type: 'bar', data: { labels: rows.map(function (r) { return r.label; }), datasets: datasets },
      options: { indexAxis: 'y', animation: false, maintainAspectRatio: false,
        scales: { x: { stacked: true, title: { display: true, text: 'seconds per optimizer step' }, ticks: axisTicks(function (v) { return num(v, v < 10 ? 1 : 0) + ' s'; }) },
                  y: { stacked: true } },
        plugins: { legend: { position: 'bottom', labels: { boxWidth: 11, font: { size: 11 } } },
          tooltip: { callbacks: { label: function (ctx) {
            var total = rows[ctx.dataIndex].total;
            return ctx.dataset.label + ': ' + num(ctx.raw * 1e3, 0) + ' ms (' + num(100 * ctx.raw / total, 1) + '%)'; } } } } } });
  }
  function drawCost() {
    var labels = ['rental', 'spot', 'ownership'];
    var values = function (c) { return [c.rental_usd, c.spot_usd, c.ownership_usd]; };
    var datasets = [];
    if (state.pinned) datasets.push({ label: 'pinned', data: values(state.pinned.report.cost), backgroundColor: '#c3cad1' });
    datasets.push({ label: state.pinned ? 'now' : 'this configuration', data: values(state.last.report.cost),
                    backgroundColor: ['#0072B2', '#009E73', '#E69F00'] });
    makeChart('chart-cost', { type: 'bar', data: { labels: labels, datasets: datasets },
      options: { animation: false, maintainAspectRatio: false,
        scales: { y: { beginAtZero: true, ticks: axisTicks(shortUsd) } },
        plugins: { legend: { display: !!state.pinned, position: 'bottom' },
          tooltip: { callbacks: { label: function (ctx) { return ctx.dataset.label + ': ' + (ctx.raw == null ? 'no price' : usd(ctx.raw)); } } } } } });
  }
  function drawMemory() {
    var m = state.last.report.memory.reduce(function (a, b) { return b.needed_bytes > a.needed_bytes ? b : a; });
    var colours = ['#0072B2', '#56B4E9', '#009E73', '#E69F00', '#CC79A7', '#D55E00', '#F0E442', '#5B6770'];
    var datasets = m.categories.map(function (c, i) {
      return { label: c.category, data: [c.bytes / 1073741824], backgroundColor: colours[i % colours.length], stack: 's' };
    });
    var device = state.deviceGib = m.device_bytes / 1073741824;
    makeChart('chart-memory', { type: 'bar', data: { labels: [m.phase], datasets: datasets },
      options: { indexAxis: 'y', animation: false, maintainAspectRatio: false,
        scales: { x: { stacked: true, beginAtZero: true, suggestedMax: device, title: { display: true, text: 'GiB per GPU (device: ' + num(device, 1) + ' GiB)' },
                       ticks: axisTicks(function (v) { return num(v, 0); }) },
                  y: { stacked: true } },
        plugins: { legend: { position: 'bottom', labels: { boxWidth: 11, font: { size: 11 } } },
          tooltip: { callbacks: { label: function (ctx) { return ctx.dataset.label + ': ' + num(ctx.raw, 2) + ' GiB'; } } } } },
      plugins: [{ id: 'deviceLine', afterDatasetsDraw: function (chart) {
        var x = chart.scales.x.getPixelForValue(state.deviceGib), a = chart.chartArea, g = chart.ctx;
        g.save(); g.strokeStyle = '#b3261e'; g.lineWidth = 2; g.setLineDash([5, 4]);
        g.beginPath(); g.moveTo(x, a.top); g.lineTo(x, a.bottom); g.stroke(); g.restore(); } }] });
  }
  function drawScaling() {
    if (!hasCharts || !state.lastScaling) return;
    $('scaling-pending').classList.add('hidden');
    $('chart-scaling').style.opacity = 1;
    var rungs = state.lastScaling.rungs.filter(function (r) { return !r.error; });
    var here = state.lastScaling.scenario_nodes;
    makeChart('chart-scaling', { type: 'bar',
      data: { labels: rungs.map(function (r) { return r.nodes + (r.nodes === 1 ? ' node' : ' nodes'); }),
        datasets: [
          { type: 'line', label: 'scaling efficiency', yAxisID: 'y2', data: rungs.map(function (r) { return r.scaling_efficiency == null ? null : 100 * r.scaling_efficiency; }),
            borderColor: '#D55E00', backgroundColor: '#D55E00', tension: 0.2, pointRadius: 3 },
          { label: 'time to train', data: rungs.map(function (r) { return r.time_to_train_seconds / 86400; }),
            backgroundColor: rungs.map(function (r) { return r.nodes === here ? '#0072B2' : 'rgba(0,114,178,0.35)'; }) }] },
      options: { animation: false, maintainAspectRatio: false,
        scales: { y: { type: 'logarithmic', title: { display: true, text: 'days (log scale)' }, ticks: axisTicks(function (v) {
                    var m = v / Math.pow(10, Math.floor(Math.log10(v))); return [1, 2, 5].indexOf(Math.round(m)) < 0 ? '' : num(v, v < 1 ? 2 : 0); }) },
                  y2: { position: 'right', min: 0, max: 100, grid: { drawOnChartArea: false }, ticks: axisTicks(function (v) { return v + '%'; }) } },
        plugins: { legend: { position: 'bottom' },
          tooltip: { callbacks: { label: function (ctx) { return ctx.dataset.yAxisID === 'y2' ? 'efficiency ' + num(ctx.raw, 1) + '%' : duration(ctx.raw * 86400); } } } } } });
  }

  // ---- compare ----
  $('pin').addEventListener('click', function () {
    if (!state.last) return;
    state.pinned = state.last;
    $('unpin').disabled = false;
    $('compare-note').textContent = 'Pinned: ' + commandLine(state.pinned.request).replace('ptsim predict ', '') +
      '. Change the controls: the figures show the difference, the charts show both.';
    draw();
  });
  $('unpin').addEventListener('click', function () {
    state.pinned = null; $('unpin').disabled = true;
    $('compare-note').textContent = 'Pin a configuration, change the controls, and every figure shows the difference.';
    if (state.last) draw();
  });
  $('nodes-half').addEventListener('click', function () { var n = $('nodes'); n.value = Math.max(1, Math.floor(Number(n.value) / 2)); n.dispatchEvent(new Event('input')); });
  $('nodes-double').addEventListener('click', function () { var n = $('nodes'); n.value = Math.min(100000, Number(n.value) * 2); n.dispatchEvent(new Event('input')); });

  // ---- start ----
  if (hasCharts) {
    Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
    Chart.defaults.color = '#36414c';
  } else {
    document.querySelectorAll('.canvasbox').forEach(function (b) {
      b.outerHTML = '<p class="nocharts">No charts: the server found no Chart.js (install the Debian package libjs-chart.js and restart ptsim serve).</p>';
    });
  }
  Promise.all([getJson('/api/scenarios'), getJson('/api/profiles')]).then(function (got) {
    state.scenarios = got[0].scenarios; state.profiles = got[1];
    state.scenarios.forEach(function (s) { option($('scenario'), s.name, s.name); });
    state.profiles.nodes.forEach(function (n) { option($('node'), n.name, n.name + ' — ' + n.gpus_per_node + ' × ' + n.gpu); });
    state.profiles.networks.forEach(function (n) { option($('network'), n.name, n.name + ' — ' + num(n.gbps, 0) + ' Gb/s ' + (n.transport === 'tcp_socket' ? 'TCP' : 'RDMA')); });
    var initial = location.hash.slice(1);
    var start = state.scenarios.some(function (s) { return s.name === initial; }) ? initial : 't4-academic-cluster';
    $('scenario').value = start;
    $('scenario').addEventListener('change', function () { location.hash = $('scenario').value; state.pinned = null; $('unpin').disabled = true; loadScenario($('scenario').value); });
    loadScenario(start);
  }).catch(function (e) { showError({ error: 'could not load the scenarios and profiles: ' + e.message, field: null }); });
})();
</script>
</body>
</html>
)page";

}  // namespace

std::string render_page(const std::string& chart_library) {
  std::string page(kHead);
  page += chart_library.empty() ? std::string(kNoCharts) : chart_library;
  page += kScript;
  return page;
}

}  // namespace ptsim::server
