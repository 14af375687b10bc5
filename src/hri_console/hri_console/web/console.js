// hri_console page: one WebSocket, JSON commands (see hri_console/core/protocol.py) and state
// snapshots (see hri_console/core/state.py). No build chain, no external files.
"use strict";
const q = new URLSearchParams(location.search);
const tok = q.get("token");
const ws = new WebSocket(`ws://${location.host}/ws` + (tok ? `?token=${encodeURIComponent(tok)}` : ""));
let nextId = 1;
let last = null;             // last state frame
let gainsFilled = false;     // the K/D fields got the config's values
const $ = (id) => document.getElementById(id);
const DEG = 180 / Math.PI;
const fmt = (v, d = 3) => (v === null || v === undefined || Number.isNaN(v)) ? "-" : Number(v).toFixed(d);
function el(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}
function send(obj) {
  obj.id = nextId++;
  if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(obj));
  else $("reason").textContent = "not connected";
}
ws.onopen = () => { $("conn").textContent = "connected"; };
ws.onclose = () => { $("conn").textContent = "disconnected"; };
ws.onmessage = (ev) => {
  const m = JSON.parse(ev.data);
  if (m.type === "state") { last = m; render(m); }
  else if (m.type === "reject") {
    $("ok").textContent = "";
    $("reason").textContent = `${m.command || "frame"} refused: ${m.reason}`;
  } else if (m.type === "ack") {
    $("reason").textContent = "";
    const msg = m.result && m.result.message ? `: ${m.result.message}` : "";
    const n = m.result && Number.isInteger(m.result.subscribers) ? ` (reached ${m.result.subscribers} subscriber${m.result.subscribers === 1 ? "" : "s"})` : "";
    $("ok").textContent = `${m.command} ok${msg}${n}`;
    if (m.result && m.result.warning) $("reason").textContent = `${m.command}: WARNING ${m.result.warning}`;
  }
};

// ------------------------------------------------------------------ rendering
function render(m) {
  $("seq").textContent = m.seq;
  $("state").textContent = JSON.stringify(m, null, 1);
  if (m.modes && $("mode").options.length === 0) {
    for (const mode of m.modes) $("mode").appendChild(el("option", {}, mode));
  }
  const g = m.impedance_gains;                       // the config's K/D: the fields' start values
  if (g && !gainsFilled) {
    gainsFilled = true;
    g.stiffness.forEach((v, i) => { if ($("stiff" + i).value === "") $("stiff" + i).value = v; });
    g.damping.forEach((v, i) => { if ($("damp" + i).value === "") $("damp" + i).value = v; });
  }
  renderHealth(m.health || {});
  renderRobot(m.robot || {});
  const sys = m.system_stop;
  if (sys && sys.stopped) $("safestop").textContent = `STOPPED: ${sys.reason}`;
  renderPid(m.pid || {});
}

// Known keys of hri_pulse's link report get their own columns; every value stays in "details".
const pick = (v, keys) => keys.map((k) => v[k]).find((x) => x !== undefined);
function renderHealth(h) {
  const tb = $("health").tBodies[0];
  const open = new Set([...tb.querySelectorAll("details[open]")].map((d) => d.dataset.name));
  tb.textContent = "";
  for (const name of Object.keys(h).sort()) {
    const r = h[name];
    const v = r.values || {};
    const tr = el("tr", {"data-name": name, "class": `lvl${r.level}`});
    tr.appendChild(el("td", {}, name));
    tr.appendChild(el("td", {"class": "level"}, ["OK", "WARN", "ERROR", "STALE"][r.level] || String(r.level)));
    tr.appendChild(el("td", {"class": "message"}, r.message));
    tr.appendChild(el("td", {"class": "connected"}, pick(v, ["connected"]) ?? "-"));
    const rates = Object.entries(v).filter(([k]) => k.endsWith("_rate_hz")).map(([k, x]) => `${k.slice(0, -8)} ${x}`);
    tr.appendChild(el("td", {"class": "rates"}, rates.join(", ") || "-"));
    tr.appendChild(el("td", {"class": "gaps"}, v.seq_gaps_minor === undefined ? "-" :
      `${v.seq_gaps_minor} / ${v.seq_gaps_moderate ?? "-"} / ${v.seq_gaps_major ?? "-"}`));
    tr.appendChild(el("td", {"class": "dup"}, pick(v, ["seq_duplicates"]) ?? "-"));
    tr.appendChild(el("td", {"class": "lost"}, pick(v, ["seq_lost"]) ?? "-"));
    tr.appendChild(el("td", {"class": "age"}, fmt(r.age_s, 1)));
    const td = el("td");
    const det = el("details", {"data-name": name});
    if (open.has(name)) det.open = true;
    det.appendChild(el("summary", {}, `${Object.keys(v).length} values`));
    det.appendChild(el("div", {"class": "kv"}, Object.entries(v).map(([k, x]) => `${k}=${x}`).join("  ")));
    td.appendChild(det);
    tr.appendChild(td);
    tb.appendChild(tr);
  }
}

function renderRobot(r) {
  const stop = r.safe_stop;
  const ss = $("safestop");
  ss.textContent = stop === true ? "STOPPED" : stop === false ? "released" : "-";
  ss.className = "badge" + (stop === true ? " STOP" : "");
  const tm = $("teleop-mode");
  tm.textContent = r.teleop_mode || "-";
  tm.className = "badge " + (r.teleop_mode || "");
  const it = r.interaction || {};
  $("int-mode").textContent = it.mode || "-";
  $("int-none").textContent = r.interaction ? "" : "no interaction controller (no state received)";
  renderInteraction(r.interaction || null);
  const at = r.atomic || null;
  $("atomic").textContent = at ? `state ${at.state}${at.fault ? " FAULT " + at.fault : ""}` : "-";
  $("atomic").className = "badge" + (at && at.fault ? " STOP" : "");
  const ee = r.ee_pose;
  $("ee-pos").textContent = ee ? ee.position_m.map((x) => fmt(x)).join(", ") : "-";
  $("ee-quat").textContent = ee ? ee.quat_xyzw.map((x) => fmt(x)).join(", ") : "-";
  const tb = $("joints").tBodies[0];
  tb.textContent = "";
  for (const j of r.joints || []) {
    const tr = el("tr", {"data-joint": j.name});
    tr.appendChild(el("td", {}, j.name));
    tr.appendChild(el("td", {}, fmt(j.position_rad * DEG, 1)));
    const td = el("td");
    if (j.min_rad !== null && j.max_rad !== null) {
      const frac = (j.position_rad - j.min_rad) / (j.max_rad - j.min_rad);
      const bar = el("span", {"class": "bar" + (j.margin_rad < 0.1 ? " warn" : "")});
      const mark = el("i");
      mark.style.left = `${Math.max(0, Math.min(1, frac)) * 100}%`;
      bar.appendChild(mark);
      td.appendChild(el("span", {}, `${fmt(j.min_rad * DEG, 0)} `));
      td.appendChild(bar);
      td.appendChild(el("span", {}, ` ${fmt(j.max_rad * DEG, 0)}`));
    }
    tr.appendChild(td);
    tr.appendChild(el("td", {"class": "margin"}, j.margin_rad === null ? "-" : fmt(j.margin_rad * DEG, 1)));
    tb.appendChild(tr);
  }
}

// The interaction controller's state: one row per field, values formatted (never a raw JSON line).
const show = (v) => Array.isArray(v) ? v.map(show).join(", ")
  : (v !== null && typeof v === "object") ? Object.entries(v).map(([k, x]) => `${k}=${show(x)}`).join(" ")
  : (typeof v === "number" && !Number.isInteger(v)) ? String(Number(v.toPrecision(6))) : String(v);
function renderInteraction(it) {
  const tb = $("int-state").tBodies[0];
  tb.textContent = "";
  if (!it) return;
  for (const [k, v] of Object.entries(it)) {
    if (k === "mode") continue;                     // the badge above
    const tr = el("tr", {"data-key": k});
    tr.appendChild(el("th", {}, k));
    tr.appendChild(el("td", {}, show(v) || "-"));
    tb.appendChild(tr);
  }
}

let gainJoints = "";
const PID_BUTTONS = ["pid-start", "pid-record", "pid-stop", "pid-reset", "pid-save", "pid-autotune", "pid-flip",
  "pid-apply-all", "pid-save-motion"];
function renderPid(p) {
  const st = p.status || {};
  const joints = st.joints || [];
  const sel = $("pid-joint");
  if (joints.join(",") !== gainJoints) {           // rebuild only when the joint set changes
    gainJoints = joints.join(",");
    const keep = sel.value;
    sel.textContent = "";
    for (const j of joints) sel.appendChild(el("option", {}, j));
    if (joints.includes(keep)) sel.value = keep;
    const tb = $("gains").tBodies[0];
    tb.textContent = "";
    for (const j of joints) {
      const tr = el("tr", {"data-joint": j});
      tr.appendChild(el("td", {}, j));
      for (const c of ["kp", "ki", "kd", "ack"]) tr.appendChild(el("td", {"class": c}, "-"));
      const td = el("td");
      for (const k of ["kp", "ki", "kd"]) td.appendChild(el("input", {"class": "num new-" + k, "placeholder": k}));
      tr.appendChild(td);
      const b = el("button", {"class": "apply"}, "apply");
      b.onclick = () => applyGains(j, tr);
      const tdb = el("td");
      tdb.appendChild(b);
      tr.appendChild(tdb);
      tb.appendChild(tr);
    }
  }
  for (const tr of $("gains").tBodies[0].rows) {
    const j = tr.dataset.joint;
    const g = (st.gains || {})[j] || {};
    const a = (st.acknowledged || {})[j];
    for (const k of ["kp", "ki", "kd"]) tr.querySelector("." + k).textContent = fmt(g[k], 4);
    tr.querySelector(".ack").textContent = a ? `${fmt(a.kp, 4)} / ${fmt(a.ki, 4)} / ${fmt(a.kd, 4)}` : "not acknowledged";
  }
  // no status from the tuning node: nothing to tune, its buttons are off (no refusal to decode)
  for (const id of PID_BUTTONS) $(id).disabled = joints.length === 0;
  const busy = p.busy;
  $("pid-busy").textContent = busy ? `running ${busy.command} ${busy.detail} …` :
    joints.length === 0 ? "no PID tuning node (no status received)" : "";
  renderProgress(p.progress);
  renderMotions(st.motions || []);
  $("pid-replay").disabled = joints.length === 0 || $("pid-motion").options.length === 0;
  renderEvaluation(p.evaluation, sel.value);
  renderAutotune((p.autotune || {})[sel.value]);
  drawError(((p.error || {})[sel.value]) || []);
}

// the tuning node's progress topic (phase, joint, fraction) as a progress bar
function renderProgress(pr) {
  const bar = $("pid-progress"), label = $("pid-progress-label");
  if (!pr) { bar.value = 0; label.textContent = "idle"; return; }
  bar.value = pr.fraction;
  const what = [pr.joint, pr.phase].filter(x => x).join(" · ");
  label.textContent = `${what} ${Math.round(pr.fraction * 100)} %` + (pr.detail ? ` – ${pr.detail}` : "");
}

// the recorded motions the tuning node can replay (its status)
let motionKey = "";
function renderMotions(motions) {
  const key = motions.join(",");
  if (key === motionKey) return;
  motionKey = key;
  const sel = $("pid-motion"), keep = sel.value;
  sel.textContent = "";
  for (const m of motions) sel.appendChild(el("option", {}, m));
  if (motions.includes(keep)) sel.value = keep;
}

// evaluations of the last test / flip / replay / recording under the graph (the thesis's test
// control window): the selected joint once per motion, then all joints and motions together
const EVAL_COLUMNS = ["AvgAbsoluteError", "AvgSignedError", "MaxOvershoot", "AvgSettlingTime5Degrees",
  "Avg50PercentResponseTime", "Samples"];
let evalKey = "";
function renderEvaluation(ev, joint) {
  const key = JSON.stringify([ev || null, joint]);
  if (key === evalKey) return;
  evalKey = key;
  const tb = $("pid-eval").tBodies[0];
  tb.textContent = "";
  if (!ev) {
    const tr = el("tr", {"class": "none"});
    tr.appendChild(el("td", {"colspan": String(EVAL_COLUMNS.length + 1)}, "no evaluation (start a test, a recording, a flip or a replay)"));
    tb.appendChild(tr);
    return;
  }
  const row = (label, e, cls) => {
    const tr = el("tr", {"class": cls});
    tr.appendChild(el("th", {}, label));
    for (const k of EVAL_COLUMNS) tr.appendChild(el("td", {"data-metric": k}, k === "Samples" ? (e[k] ?? "-") : fmt(e[k], 2)));
    tb.appendChild(tr);
  };
  for (const [m, md] of Object.entries(ev.motions || {})) {
    const e = (md.joints || {})[joint];
    if (e) row(`${joint} · ${m}`, e, "joint");
  }
  row("all joints, all motions", ev.evaluation || {}, "all");
}

let tuneKey = "";
function renderAutotune(t) {
  const key = JSON.stringify(t || null);
  if (key === tuneKey) return;
  tuneKey = key;
  const tb = $("autotune").tBodies[0];
  tb.textContent = "";
  $("relay").textContent = "";
  if (!t) return;
  const r = t.relay || {};
  $("relay").textContent = `relay ${r.ok ? "ok" : "FAILED (" + r.reason + ")"} · Ku ${fmt(r.ku, 4)} · Tu ${fmt(r.tu_s, 4)} s · ` +
    `amplitude ${fmt(r.amplitude_deg, 2)} deg · ${r.peaks} peaks · applied: ${t.applied || "-"}`;
  for (const [h, g] of Object.entries(t.heuristics || {})) {
    const tr = el("tr", {"data-heuristic": h, "class": h === t.applied ? "applied" : ""});
    tr.appendChild(el("td", {}, h));
    for (const k of ["kp", "ki", "kd"]) tr.appendChild(el("td", {}, fmt(g[k], 4)));
    const b = el("button", {"class": "apply"}, "apply");
    b.onclick = () => send({type: "pid_apply", joint: t.joint, heuristic: h});
    const td = el("td");
    td.appendChild(b);
    tr.appendChild(td);
    tb.appendChild(tr);
  }
}

function drawError(samples) {
  const c = $("errgraph");
  const ctx = c.getContext("2d");
  const W = c.width, H = c.height, L = 48, B = 18;
  ctx.clearRect(0, 0, W, H);
  ctx.font = "11px sans-serif";
  ctx.fillStyle = "#444";
  if (samples.length < 2) { ctx.fillText("no samples (needs set-points and joint states)", L, H / 2); return; }
  const t0 = samples[0][0], t1 = samples[samples.length - 1][0];
  let lo = Infinity, hi = -Infinity;
  for (const [, e] of samples) { const d = e * DEG; lo = Math.min(lo, d); hi = Math.max(hi, d); }
  lo = Math.min(lo, 0); hi = Math.max(hi, 0);
  if (hi - lo < 1e-6) { hi += 1; lo -= 1; }
  const x = (t) => L + (W - L - 4) * (t - t0) / Math.max(t1 - t0, 1e-9);
  const y = (d) => 4 + (H - B - 8) * (hi - d) / (hi - lo);
  ctx.strokeStyle = "#999";
  ctx.beginPath(); ctx.moveTo(L, y(0)); ctx.lineTo(W - 4, y(0)); ctx.stroke();
  ctx.fillText(`${hi.toFixed(2)}°`, 2, y(hi) + 8);
  ctx.fillText(`${lo.toFixed(2)}°`, 2, y(lo));
  ctx.fillText(`${(t1 - t0).toFixed(2)} s`, W - 50, H - 4);
  ctx.strokeStyle = "#c00";
  ctx.beginPath();
  samples.forEach(([t, e], i) => { const px = x(t), py = y(e * DEG); if (i) ctx.lineTo(px, py); else ctx.moveTo(px, py); });
  ctx.stroke();
}

// ------------------------------------------------------------------ commands
function applyGains(joint, tr) {
  const gains = {};
  for (const k of ["kp", "ki", "kd"]) {
    const v = tr.querySelector(".new-" + k).value.trim();
    if (v !== "") gains[k] = Number(v);
  }
  send({type: "pid_apply", joint, gains});
}
const joint = () => $("pid-joint").value;
$("stop").onclick = () => send({type: "safe_stop"});
$("release").onclick = () => send({type: "release_stop"});
$("setmode").onclick = () => send({type: "set_mode", mode: $("mode").value});
$("setgains").onclick = () => {
  const num = (id) => { const v = $(id).value.trim(); return v === "" ? null : Number(v); };
  send({type: "set_gains", gains: {stiffness: [0, 1, 2, 3, 4, 5].map((i) => num("stiff" + i)),
                                   damping: [0, 1, 2, 3, 4, 5].map((i) => num("damp" + i))}});
};
$("pid-start").onclick = () => send({type: "pid_start", joint: joint()});
$("pid-record").onclick = () => send({type: "pid_record", joint: joint()});
$("pid-stop").onclick = () => send({type: "pid_stop"});
$("pid-reset").onclick = () => send({type: "pid_reset"});
$("pid-save").onclick = () => send({type: "pid_save"});
$("pid-autotune").onclick = () => send({type: "pid_autotune", joint: joint()});
$("pid-flip").onclick = () => send({type: "pid_flip", joint: joint()});
$("pid-replay").onclick = () => send({type: "pid_replay", motion: $("pid-motion").value});
$("pid-save-motion").onclick = () => send({type: "pid_save_motion", motion: $("pid-motion-name").value.trim()});
$("pid-apply-all").onclick = () => {
  const gains = {};
  for (const k of ["kp", "ki", "kd"]) { const v = $("all-" + k).value.trim(); gains[k] = v === "" ? null : Number(v); }
  send({type: "pid_apply_all", gains});
};
$("pid-joint").onchange = () => { tuneKey = ""; if (last) renderPid(last.pid || {}); };
