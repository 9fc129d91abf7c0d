#!/usr/bin/env node
// Records every event it receives, one JSON line each, to argv[2]. With
// argv[3] it does not read stdin until that file exists (a slow reader).
const fs = require("fs");
const readline = require("readline");
const out = process.argv[2];
const hold = process.argv[3];
const send = (o) => process.stdout.write(JSON.stringify(o) + "\n");
send({ type: "hello", name: "recorder", version: "1" });
send({ type: "subscribe", events: ["session_start", "turn_start", "tool_call", "turn_end", "assistant_message"] });
send({ type: "ready" });
function start() {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  const fd = fs.openSync(out, "a");
  rl.on("line", (line) => {
    const f = JSON.parse(line);
    if (f.type === "event") fs.writeSync(fd, line + "\n");
    if (f.type === "shutdown") { send({ type: "shutdown_ack" }); process.exit(0); }
  });
}
process.stdin.pause();
if (!hold) start();
else {
  const t = setInterval(() => { if (fs.existsSync(hold)) { clearInterval(t); start(); } }, 10);
}
