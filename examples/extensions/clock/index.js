#!/usr/bin/env node
// clock: a slash command and a live panel in plain Node, no SDK.
//
//   /clock        shows the time as a note
//   /clock live   opens a panel that ticks every second; q or esc closes it
//
// It sends `ready` once its command is registered: without it zot would
// wait 250 ms of silence before counting it ready (and `zot ext check`
// warns of that wait).
"use strict";
const readline = require("readline");

const send = (frame) => process.stdout.write(JSON.stringify(frame) + "\n");
const now = () => new Date().toISOString().replace("T", " ").slice(0, 19) + " UTC";
const ticking = new Map(); // panel id -> interval

send({ type: "hello", name: "clock", version: "1.0.0", capabilities: ["commands"] });
send({ type: "register_command", name: "clock", description: "show the time (/clock live: a ticking panel)" });
send({ type: "ready" });

function panel(id) {
  return { id, title: "clock", lines: [now()], footer: "q or esc closes" };
}

function stop(id) {
  clearInterval(ticking.get(id));
  ticking.delete(id);
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  let f;
  try {
    f = JSON.parse(line);
  } catch {
    return;
  }
  switch (f.type) {
    case "command_invoked":
      if (f.args === "live") {
        const id = "clock-" + f.id;
        send({ type: "command_response", id: f.id, action: "noop", open_panel: panel(id) });
        const tick = () => {
          const { title, lines, footer } = panel(id);
          send({ type: "panel_render", panel_id: id, title, lines, footer });
        };
        ticking.set(id, setInterval(tick, 1000));
      } else {
        send({ type: "command_response", id: f.id, action: "display", display: "It is " + now() + "." });
      }
      break;
    case "panel_key":
      if (f.key === "rune" && f.text === "q") {
        stop(f.panel_id);
        send({ type: "panel_close", panel_id: f.panel_id });
      }
      break;
    case "panel_close": // the user closed it (esc)
      stop(f.panel_id);
      break;
    case "shutdown":
      send({ type: "shutdown_ack" });
      process.exit(0);
  }
});
rl.on("close", () => process.exit(0));
