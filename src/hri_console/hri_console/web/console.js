// hri_console page: one WebSocket, JSON commands (see hri_console/core/protocol.py).
"use strict";
const q = new URLSearchParams(location.search);
const tok = q.get("token");
const ws = new WebSocket(`ws://${location.host}/ws` + (tok ? `?token=${encodeURIComponent(tok)}` : ""));
let nextId = 1;
const $ = (id) => document.getElementById(id);
function send(obj) { obj.id = nextId++; ws.send(JSON.stringify(obj)); }
ws.onopen = () => { $("conn").textContent = "connected"; };
ws.onclose = () => { $("conn").textContent = "disconnected"; };
ws.onmessage = (ev) => {
  const m = JSON.parse(ev.data);
  if (m.type === "state") {
    $("seq").textContent = m.seq;
    $("state").textContent = JSON.stringify(m, null, 1);
    if (m.modes && $("mode").options.length === 0) {
      for (const mode of m.modes) { const o = document.createElement("option"); o.textContent = mode; $("mode").appendChild(o); }
    }
  } else if (m.type === "reject") {
    $("reason").textContent = `${m.command || "frame"} refused: ${m.reason}`;
  } else if (m.type === "ack") {
    $("reason").textContent = "";
  }
};
$("stop").onclick = () => send({type: "safe_stop"});
$("setmode").onclick = () => send({type: "set_mode", mode: $("mode").value});
$("setgains").onclick = () => {
  const gains = {};
  for (const k of ["kp", "ki", "kd"]) { const v = $(k).value.trim(); if (v !== "") gains[k] = Number(v); }
  send({type: "set_gains", gains});
};
