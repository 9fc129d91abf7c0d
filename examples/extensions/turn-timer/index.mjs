// turn-timer: times each model turn and can cap how many turns one prompt
// may take. Written with the JavaScript SDK (sdk/js/zot-ext.mjs).
//
//   a note after each turn   "turn 2: 3.1 s, 2 tool calls"
//   /timings                 this session's turns: count, total, slowest
//   /budget N | off          refuse turns after the Nth of a prompt
//
// TURN_BUDGET in the environment sets the budget at start (for -p runs).
// zot-ext.mjs beside this file is a copy of zot's sdk/js/zot-ext.mjs: the
// example works wherever it is installed.
import { Extension, block, display } from "./zot-ext.mjs";

const ext = new Extension("turn-timer", "1.0.0");
let budget = Number.parseInt(process.env.TURN_BUDGET ?? "", 10) || 0;
let current = null; // {step, started, tools}
const done = []; // {step, ms, tools}

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

ext.on("turn_start", (ev) => {
  if (ev.step === 1) ext.clearNotes(); // a new prompt: last prompt's notes go
  current = { step: ev.step, started: Date.now(), tools: 0 };
});

ext.on("tool_call", () => {
  if (current) current.tools++;
});

ext.on("turn_end", (ev) => {
  if (!current) return;
  const turn = { step: current.step, ms: Date.now() - current.started, tools: current.tools };
  done.push(turn);
  current = null;
  const how = ev.stop === "error" || ev.stop === "aborted" ? `, ${ev.stop}` : "";
  ext.notify(`turn ${turn.step}: ${seconds(turn.ms)}, ${plural(turn.tools, "tool call")}${how}`);
});

ext.interceptTurnStart((step) => {
  if (budget > 0 && step > budget) {
    return block(`turn budget of ${budget} reached; raise it with /budget N or lift it with /budget off`);
  }
});

ext.command("timings", "how long this session's model turns took", () => {
  if (done.length === 0) return display("no turns yet");
  const total = done.reduce((sum, t) => sum + t.ms, 0);
  const slowest = done.reduce((a, b) => (b.ms > a.ms ? b : a));
  return display(
    `${plural(done.length, "turn")} in ${seconds(total)}; slowest: turn ${slowest.step} of its prompt, ${seconds(slowest.ms)}`,
  );
});

ext.command("budget", "cap the turns of a prompt: /budget N, /budget off", (args) => {
  const arg = args.trim();
  if (arg === "") return display(budget > 0 ? `at most ${plural(budget, "turn")} per prompt` : "no turn budget");
  if (arg === "off") {
    budget = 0;
    return display("turn budget lifted");
  }
  const n = Number.parseInt(arg, 10);
  if (!(n > 0) || String(n) !== arg) throw new Error(`want a positive number or "off", not ${JSON.stringify(arg)}`);
  budget = n;
  return display(`at most ${plural(budget, "turn")} per prompt`);
});

ext.run();
