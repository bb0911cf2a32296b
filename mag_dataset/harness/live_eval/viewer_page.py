"""The one page of ``mag view`` (:mod:`mag_dataset.harness.live_eval.viewer`): HTML, CSS and script.

Everything the page shows from the run folder is set as text (``textContent``), never as
HTML, so an episode's goal or a model's output cannot inject markup. Keys: left/right arrow
step through the episode, up/down change episode. The address keeps ``#episode=ID&step=N``.
"""

from __future__ import annotations

PAGE = r"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>mag view</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  :root { --ok: #2b8a3e; --bad: #c92a2a; --err: #e67700; --int: #5c7cfa; --line: #dee2e6; --muted: #6c757d;
          --bg: #f8f9fa; --target: #f03e3e; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #212529;
         background: var(--bg); height: 100vh; display: flex; flex-direction: column; }
  header { background: #212529; color: #f8f9fa; padding: 8px 16px; display: flex; gap: 18px; align-items: baseline;
           flex-wrap: wrap; }
  header h1 { font-size: 16px; margin: 0; font-weight: 600; }
  header .meta { color: #ced4da; font-size: 13px; }
  header .meta b { color: #fff; }
  .wrap { flex: 1; display: flex; min-height: 0; }
  nav { width: 290px; flex: none; border-right: 1px solid var(--line); background: #fff; display: flex;
        flex-direction: column; min-height: 0; }
  .filters { display: flex; gap: 4px; padding: 8px; border-bottom: 1px solid var(--line); flex-wrap: wrap; }
  .filters button { border: 1px solid var(--line); background: #fff; border-radius: 12px; padding: 2px 10px;
                    font-size: 12px; cursor: pointer; }
  .filters button.on { background: #212529; color: #fff; border-color: #212529; }
  #episodes { list-style: none; margin: 0; padding: 0; overflow-y: auto; flex: 1; }
  #episodes li { padding: 7px 12px; border-bottom: 1px solid #f1f3f5; cursor: pointer; display: grid;
                 grid-template-columns: 12px 1fr; column-gap: 8px; }
  #episodes li:hover { background: #f1f3f5; }
  #episodes li.sel { background: #e7f5ff; }
  #episodes .id { font-weight: 600; font-size: 13px; word-break: break-all; }
  #episodes .sub { grid-column: 2; color: var(--muted); font-size: 12px; }
  .dot { width: 10px; height: 10px; border-radius: 50%; margin-top: 5px; background: var(--muted); }
  .success { --c: var(--ok); } .failure { --c: var(--bad); } .error { --c: var(--err); } .interrupted { --c: var(--int); }
  .dot.success, .dot.failure, .dot.error, .dot.interrupted { background: var(--c); }
  .pill { display: inline-block; border-radius: 10px; padding: 1px 9px; color: #fff; background: var(--c, var(--muted));
          font-size: 12px; font-weight: 600; text-transform: uppercase; letter-spacing: .03em; }
  main { flex: 1; overflow-y: auto; padding: 14px 20px; min-width: 0; }
  .empty { color: var(--muted); margin-top: 40px; text-align: center; }
  #ep-head h2 { margin: 0 0 4px; font-size: 18px; }
  #ep-head .goal { font-size: 15px; margin: 4px 0 6px; }
  #ep-head .facts { color: var(--muted); font-size: 13px; }
  .verdict { margin: 8px 0 10px; padding: 8px 12px; border-left: 4px solid var(--c, var(--muted)); background: #fff;
             font-size: 13px; }
  .verdict div + div { margin-top: 2px; }
  .verdict .k { color: var(--muted); display: inline-block; min-width: 76px; }
  .stepbar { display: flex; gap: 6px; align-items: center; margin: 8px 0 12px; flex-wrap: wrap; }
  .stepbar button { border: 1px solid var(--line); background: #fff; border-radius: 6px; padding: 3px 10px;
                    cursor: pointer; font-size: 13px; }
  .stepbar button.on { background: #1c7ed6; color: #fff; border-color: #1c7ed6; }
  .stepbar button.bad { border-color: var(--bad); color: var(--bad); }
  .stepbar button.on.bad { background: var(--bad); color: #fff; }
  .stepbar button:disabled { opacity: .4; cursor: default; }
  .stepbar .sep { width: 1px; height: 22px; background: var(--line); margin: 0 4px; }
  .stepbar label { font-size: 13px; color: #495057; margin-left: 8px; cursor: pointer; }
  .cols { display: grid; grid-template-columns: minmax(0, 1.35fr) minmax(300px, 1fr); gap: 18px; align-items: start; }
  .shotbox { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px; }
  .frame { position: relative; display: block; width: 100%; line-height: 0; }
  .frame img { display: block; width: 100%; height: auto; border: 1px solid #ced4da; }
  .frame svg { position: absolute; inset: 1px; width: calc(100% - 2px); height: calc(100% - 2px); pointer-events: none;
               overflow: visible; }
  .caption { font-size: 12px; color: var(--muted); margin-top: 6px; line-height: 1.4; }
  .legend { display: inline-block; width: 12px; height: 10px; border: 2px solid var(--target);
            background: rgba(240, 62, 62, .15); vertical-align: -1px; margin-right: 4px; }
  section.card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; margin-bottom: 10px; }
  section.card h3 { margin: 0 0 4px; font-size: 12px; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); }
  section.card.problem { border-color: #ffc9c9; background: #fff5f5; }
  section.card.problem h3 { color: var(--bad); }
  pre { margin: 0; white-space: pre-wrap; word-break: break-word; font: 12.5px/1.45 ui-monospace, "SFMono-Regular",
        Menlo, Consolas, monospace; }
  .guide { font-size: 15px; }
  .kv { display: grid; grid-template-columns: auto 1fr; column-gap: 12px; font-size: 13px; }
  .kv .k { color: var(--muted); }
  .hidden { display: none !important; }
</style>
</head>
<body>
<header>
  <h1>mag view</h1>
  <span class="meta" id="run-meta">loading…</span>
</header>
<div class="wrap">
  <nav>
    <div class="filters" id="filters"></div>
    <ul id="episodes"></ul>
  </nav>
  <main>
    <div id="placeholder" class="empty">Choose an episode on the left.</div>
    <div id="episode" class="hidden">
      <div id="ep-head">
        <h2><span id="ep-id"></span> <span id="ep-status" class="pill"></span></h2>
        <div class="goal" id="ep-goal"></div>
        <div class="facts" id="ep-facts"></div>
        <div class="verdict" id="ep-verdict"></div>
      </div>
      <div class="stepbar" id="stepbar">
        <button id="step-prev" title="previous step (←)">◀ Prev</button>
        <span id="step-buttons"></span>
        <button id="step-next" title="next step (→)">Next ▶</button>
        <span class="sep"></span>
        <label><input type="checkbox" id="som-toggle" checked> Set-of-Mark overlay</label>
      </div>
      <div class="cols">
        <div class="shotbox">
          <div class="frame" id="frame">
            <img id="shot" alt="screenshot of the step">
            <svg id="overlay" xmlns="http://www.w3.org/2000/svg" preserveAspectRatio="none"></svg>
          </div>
          <div class="caption" id="shot-caption"></div>
        </div>
        <div id="details"></div>
      </div>
    </div>
  </main>
</div>
<script>
"use strict";
const state = { run: null, filter: "all", episode: null, step: 0 };
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else if (k === "text") node.textContent = v; else node.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}
const pct = (x) => (x === null || x === undefined) ? "–" : (100 * x).toFixed(1) + "%";
const ci = (c) => c ? "[" + (100 * c[0]).toFixed(1) + ", " + (100 * c[1]).toFixed(1) + "]" : "";

async function getJSON(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(url + ": HTTP " + r.status);
  return r.json();
}

function parseHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  return { episode: h.get("episode"), step: parseInt(h.get("step") || "0", 10) || 0 };
}
function writeHash() {
  if (!state.episode) return;
  history.replaceState(null, "", "#episode=" + encodeURIComponent(state.episode.id) + "&step=" + state.step);
}

function renderRun() {
  const run = state.run, s = run.summary;
  const meta = $("run-meta");
  meta.textContent = "";
  meta.append(el("b", { text: run.run }));
  if (s) {
    const o = s.overall;
    meta.append(" · agent ", el("b", { text: s.agent || "?" }), " · view " + s.view + " · contract " + s.contract +
      " · " + o.episodes + " episodes · strict success ", el("b", { text: pct(o.success_rate) }),
      " " + ci(o.success_ci95) + " over " + o.scored + " scored" + (o.errors ? " · " + o.errors + " errored" : ""));
  } else {
    meta.append(" · " + run.episodes.length + " episodes (no report.json)");
  }
  const counts = { all: run.episodes.length };
  for (const e of run.episodes) counts[e.status] = (counts[e.status] || 0) + 1;
  const filters = $("filters");
  filters.textContent = "";
  for (const f of ["all", "success", "failure", "error", "interrupted"]) {
    if (f !== "all" && !counts[f]) continue;
    const b = el("button", { class: f === state.filter ? "on" : "", "data-filter": f, text: f + " " + (counts[f] || 0) });
    b.onclick = () => { state.filter = f; renderRun(); };
    filters.append(b);
  }
  const list = $("episodes");
  list.textContent = "";
  for (const e of run.episodes) {
    if (state.filter !== "all" && e.status !== state.filter) continue;
    const li = el("li", { "data-episode": e.id, class: state.episode && state.episode.id === e.id ? "sel" : "" },
      el("span", { class: "dot " + e.status, title: e.status }),
      el("span", { class: "id", text: e.id }),
      el("span", { class: "sub", text: e.status + " · reward " + e.reward + " · " + e.steps + " step" + (e.steps === 1 ? "" : "s") }));
    li.onclick = () => openEpisode(e.id, 0);
    list.append(li);
  }
}

async function openEpisode(id, step) {
  const ep = await getJSON("/api/episode?id=" + encodeURIComponent(id));
  state.episode = ep;
  state.step = Math.max(0, Math.min(step, frames().length - 1));
  renderRun();
  renderEpisode();
}

function frames() {
  const ep = state.episode;
  const out = ep.attempts.map((a, i) => ({ kind: "step", attempt: a, label: "Step " + (i + 1) }));
  if (ep.final_url) out.push({ kind: "final", label: "Final page" });
  return out;
}

function renderEpisode() {
  const ep = state.episode;
  $("placeholder").classList.add("hidden");
  $("episode").classList.remove("hidden");
  $("ep-id").textContent = ep.id;
  const pill = $("ep-status");
  pill.textContent = ep.status;
  pill.className = "pill " + ep.status;
  $("ep-goal").textContent = ep.intent || "";
  const c = ep.counts || {};
  $("ep-facts").textContent = [ep.task, "seed " + ep.seed, "raw reward " + ep.reward, "ended by " + (ep.ended_by || "?"),
    c.steps + " step(s)", c.format_failures + " format failure(s)", c.invalid_actions + " invalid action(s)",
    (c.requests ? c.requests + " request(s), " + c.retries + " retries, " + c.timeouts + " timeouts" : null),
    (c.seconds !== undefined && c.seconds !== null ? c.seconds + " s" : null)].filter(Boolean).join(" · ");
  const v = $("ep-verdict");
  v.textContent = "";
  v.className = "verdict " + ep.status;
  const line = (k, text) => v.append(el("div", {}, el("span", { class: "k", text: k }), text));
  line("outcome", ep.status === "success" ? "success: the task's check passed" : ep.status);
  const check = ep.check || {};
  if (check.expected) line("expected", String(check.expected));
  if (check.found) line("found", String(check.found));
  if (check.reason) line("check", String(check.reason));
  if (check.given_answer) line("answer", String(check.given_answer));
  if (ep.error) line("error", String(ep.error));
  if (ep.status !== "success" && !check.expected && !ep.error && ep.why) line("why", ep.why);
  renderStepbar();
  renderStep();
}

function renderStepbar() {
  const box = $("step-buttons");
  box.textContent = "";
  frames().forEach((f, i) => {
    const a = f.attempt;
    const bad = a && (!a.format_ok || a.invalid_action || a.agent_error);
    const b = el("button", { class: (i === state.step ? "on " : "") + (bad ? "bad" : ""), "data-step": String(i),
                             text: f.kind === "final" ? "Final" : String(i + 1) });
    b.onclick = () => { state.step = i; renderStepbar(); renderStep(); };
    box.append(b);
  });
  $("step-prev").disabled = state.step === 0;
  $("step-next").disabled = state.step >= frames().length - 1;
}

function card(title, body, problem) {
  const s = el("section", { class: "card" + (problem ? " problem" : "") }, el("h3", { text: title }));
  s.append(body);
  return s;
}
const pre = (text) => el("pre", { text: text });

function renderStep() {
  const f = frames()[state.step];
  writeHash();
  const img = $("shot"), details = $("details"), cap = $("shot-caption");
  details.textContent = "";
  const useSom = $("som-toggle").checked;
  if (f.kind === "final") {
    img.dataset.target = "";
    img.src = state.episode.final_url;
    cap.textContent = "The page after the last step.";
    details.append(card("Final page", el("div", { text: "The page as the episode ended (" + state.episode.status + ")." })));
    drawOverlay(null);
    return;
  }
  const a = f.attempt;
  img.src = (useSom && a.som_url) ? a.som_url : a.screenshot_url;
  drawOverlay(a);
  cap.textContent = "";
  if (a.target_bbox || (a.action && a.action.coordinate)) cap.append(el("span", { class: "legend" }));
  cap.append(a.target_bbox ? "the chosen target" + (a.action && a.action.element_id ? " [" + a.action.element_id + "]" : "") :
             (a.action && a.action.coordinate ? "the point acted on (no candidate box)" : "no target on this step"),
             " · " + (useSom && a.som_url ? "Set-of-Mark screenshot" : "plain screenshot") + (a.url ? " · " + a.url : ""));
  if (a.guide) details.append(card("Guide", el("div", { class: "guide", text: a.guide })));
  if (a.action) details.append(card("Parsed action", pre(formatAction(a.action))));
  const problems = [];
  if (a.agent_error) problems.push(["agent error (the infrastructure's)", a.agent_error]);
  if (!a.format_ok && !a.agent_error) problems.push(["format failure", a.format_reason || "the output did not parse"]);
  if (a.invalid_action) problems.push(["invalid action", a.invalid_action]);
  if (a.browsergym_error && !a.invalid_action) problems.push(["BrowserGym error (action performed)", a.browsergym_error]);
  if (problems.length) {
    const body = el("div");
    for (const [k, t] of problems) body.append(el("div", {}, el("b", { text: k + ": " }), pre(t)));
    details.append(card("Errors", body, true));
  }
  if (a.output !== null && a.output !== undefined) {
    details.append(card("Model output (raw)", pre(a.output || (a.agent_error ? "(none: the agent raised, see the error)" : "(empty)"))));
  }
  const kv = el("div", { class: "kv" });
  const row = (k, t) => { if (t !== null && t !== undefined && t !== "") kv.append(el("span", { class: "k", text: k }), el("span", { text: String(t) })); };
  if (a.agent_error) {
    row("BrowserGym", "nothing executed: the episode ended here");
  } else {
    row("BrowserGym", a.browsergym_action);
    row("reward", a.reward);
    row("task done", a.done === undefined ? null : (a.done ? "yes" : "no"));
  }
  row("recorded step", a.recorded_step);
  row("candidates", a.candidates);
  row("agent time", a.agent_seconds !== undefined ? a.agent_seconds + " s" : null);
  if (a.requests) row("requests", a.requests + " (" + a.retries + " retries, " + a.timeouts + " timeouts)");
  details.append(card("Execution", kv));
}

function formatAction(action) {  // one field a line, arrays kept on theirs; empty fields left out
  const lines = Object.entries(action).filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => "  " + JSON.stringify(k) + ": " + JSON.stringify(v).replace(/,/g, ", "));
  return "{\n" + lines.join(",\n") + "\n}";
}

function drawOverlay(a) {
  const svg = $("overlay"), img = $("shot");
  svg.textContent = "";
  const draw = () => {
    const w = img.naturalWidth, h = img.naturalHeight;
    if (!w || !h) return;
    svg.setAttribute("viewBox", "0 0 " + w + " " + h);
    svg.textContent = "";
    if (!a) return;
    const ns = "http://www.w3.org/2000/svg";
    const px = w / Math.max(1, img.clientWidth);  // image pixels per screen pixel
    if (a.target_bbox) {
      const [x0, y0, x1, y1] = a.target_bbox;
      const r = document.createElementNS(ns, "rect");
      r.setAttribute("id", "target");
      r.setAttribute("x", x0); r.setAttribute("y", y0);
      r.setAttribute("width", Math.max(1, x1 - x0)); r.setAttribute("height", Math.max(1, y1 - y0));
      r.setAttribute("fill", "rgba(240,62,62,0.15)"); r.setAttribute("stroke", "#f03e3e");
      r.setAttribute("stroke-width", 3 * px); r.setAttribute("rx", 2 * px);
      svg.append(r);
    }
    if (a.action && a.action.coordinate) {
      const [x, y] = a.action.coordinate;
      const c = document.createElementNS(ns, "circle");
      c.setAttribute("id", "target-point");
      c.setAttribute("cx", x); c.setAttribute("cy", y); c.setAttribute("r", 5 * px);
      c.setAttribute("fill", "#f03e3e"); c.setAttribute("stroke", "#fff"); c.setAttribute("stroke-width", 1.5 * px);
      svg.append(c);
    }
  };
  if (img.complete && img.naturalWidth) draw();
  img.onload = draw;
  state.redraw = draw;
}
window.addEventListener("resize", () => { if (state.redraw) state.redraw(); });

function step(delta) {
  if (!state.episode) return;
  const n = frames().length;
  const next = Math.max(0, Math.min(n - 1, state.step + delta));
  if (next !== state.step) { state.step = next; renderStepbar(); renderStep(); }
}
function moveEpisode(delta) {
  const ids = [...document.querySelectorAll("#episodes li")].map((li) => li.dataset.episode);
  if (!ids.length) return;
  const i = state.episode ? ids.indexOf(state.episode.id) : -1;
  const j = Math.max(0, Math.min(ids.length - 1, i + delta));
  if (ids[j] && (!state.episode || ids[j] !== state.episode.id)) openEpisode(ids[j], 0);
}

window.addEventListener("hashchange", () => {  // a link or an edited address; replaceState fires none
  const h = parseHash();
  if (h.episode && state.run && state.run.episodes.some((e) => e.id === h.episode)) openEpisode(h.episode, h.step);
});
$("step-prev").onclick = () => step(-1);
$("step-next").onclick = () => step(1);
$("som-toggle").onchange = () => { if (state.episode) renderStep(); };
document.addEventListener("keydown", (e) => {
  if (e.target.tagName === "INPUT" && e.target.type !== "checkbox") return;
  if (e.key === "ArrowRight") step(1); else if (e.key === "ArrowLeft") step(-1);
  else if (e.key === "ArrowDown") { moveEpisode(1); e.preventDefault(); }
  else if (e.key === "ArrowUp") { moveEpisode(-1); e.preventDefault(); }
});

(async () => {
  try {
    state.run = await getJSON("/api/run");
  } catch (err) {
    $("run-meta").textContent = String(err);
    return;
  }
  renderRun();
  const h = parseHash();
  if (h.episode && state.run.episodes.some((e) => e.id === h.episode)) openEpisode(h.episode, h.step);
  document.body.dataset.ready = "1";
})();
</script>
</body>
</html>
"""
