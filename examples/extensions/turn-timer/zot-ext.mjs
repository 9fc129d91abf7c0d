// zot-ext: write zot extensions in JavaScript (or TypeScript, through
// zot-ext.d.mts beside this file).
//
// One file, Node 18+ and no packages: copy it next to your extension. It
// speaks zot's extension protocol v1 (docs/extensions.md) in full:
// commands, tools, events, the three intercepts with their rewrites,
// notes, panels and shutdown. Reference: docs/sdk.md.
//
//   import { Extension, prompt } from "./zot-ext.mjs";
//
//   const ext = new Extension("hello", "1.0.0");
//   ext.command("hello", "say hi", (args) => prompt(`Greet ${args || "me"} in one short sentence.`));
//   ext.run();
//
// How it runs:
//
// - Handlers may be async. Commands, tools and intercepts start as their
//   frames arrive, without waiting for each other; events, panel keys and
//   panel closes run one at a time, in the order they came.
// - A handler that throws (or whose promise rejects) answers with an
//   error: a command with its error text, a tool with an is_error result,
//   an interceptor with allow (or block, when the manifest says
//   "fail_closed": true). The stack goes to stderr, which zot keeps in the
//   extension's log.
// - stdout belongs to the protocol: console.log, console.info and
//   console.debug write to stderr.
// - On shutdown (or when zot closes stdin) onShutdown handlers run, work in
//   flight gets up to 1.5 s to finish, shutdown_ack is sent and the
//   process exits.

import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

export const PROTOCOL_VERSION = 1;
const SHUTDOWN_GRACE_MS = 1500; // of zot's 2 s
const EVENTS = ["session_start", "turn_start", "tool_call", "turn_end", "assistant_message"];
const LEVELS = ["info", "success", "warn", "error"];
const ACTIONS = ["prompt", "insert", "display", "noop"];

// Command responses.
export const prompt = (text, panel) => ({ action: "prompt", text, panel });
export const insert = (text, panel) => ({ action: "insert", text, panel });
export const display = (text, panel) => ({ action: "display", text, panel });
export const noop = (panel, error) => ({ action: "noop", panel, error });

// Tool results.
export const textResult = (text, isError = false) => ({ content: [{ type: "text", text: String(text) }], isError });
export const errorResult = (text) => textResult(text, true);
export const imageResult = (data, mimeType = "image/png", text) => {
  const content = [{ type: "image", mime_type: mimeType, data: Buffer.from(data).toString("base64") }];
  if (text) content.unshift({ type: "text", text });
  return { content, isError: false };
};

// Intercept decisions. undefined (or null) from a handler means allow.
export const allow = (reason) => ({ reason });
export const block = (reason) => ({ block: true, reason });
export const rewrite = (args, reason) => ({ modifiedArgs: args, reason });
export const replace = (text) => ({ replaceText: text });

export class Extension {
  constructor(name, version = "0.0.0", { failClosed } = {}) {
    this.name = name;
    this.version = version;
    this.info = {}; // hello_ack: cwd, data_dir, extension_dir, provider, model…
    this.failClosed = failClosed ?? manifestFailClosed();
    this._commands = new Map();
    this._tools = new Map();
    this._events = new Map(); // event -> [handler]
    this._intercepts = new Map(); // event -> handler
    this._panelKey = [];
    this._panelClose = [];
    this._shutdown = [];
    this._started = false;
    this._inflight = new Set();
    this._ordered = Promise.resolve(); // the chain events and panel keys run on
    this._write = process.stdout.write.bind(process.stdout);
    process.stdout.on("error", () => process.exit(0)); // zot is gone
    // console.log must not break the protocol.
    for (const k of ["log", "info", "debug"]) console[k] = console.error.bind(console);
  }

  // Registration: each works before run() and while running.

  /** fn(args: string) → response | string (display) | undefined (noop) */
  command(name, description, fn) {
    name = name.replace(/^\//, "");
    const frame = { type: "register_command", name, description: description ?? "" };
    this._commands.set(name, { fn, frame });
    if (this._started) this._send(frame);
    return this;
  }

  /** fn(args: object) → string | {content, isError} | blocks[] */
  tool(name, description, schema, fn) {
    const frame = { type: "register_tool", name, description: description ?? "", schema: schema ?? { type: "object", properties: {} } };
    this._tools.set(name, { fn, frame });
    if (this._started) this._send(frame);
    return this;
  }

  /** fn(event) for each named event. */
  on(events, fn) {
    const list = Array.isArray(events) ? events : [events];
    for (const ev of list) {
      if (!EVENTS.includes(ev)) throw new Error(`unknown event ${JSON.stringify(ev)} (events: ${EVENTS.join(", ")})`);
      if (!this._events.has(ev)) this._events.set(ev, []);
      this._events.get(ev).push(fn);
    }
    if (this._started) this._send({ type: "subscribe", events: list });
    return this;
  }

  /** fn(toolName, args, toolId) → undefined | block() | rewrite() */
  interceptToolCall(fn) {
    return this._intercept("tool_call", fn);
  }

  /** fn(step) → undefined | block() */
  interceptTurnStart(fn) {
    return this._intercept("turn_start", fn);
  }

  /** fn(text) → undefined | string (replacement) | replace() | block() */
  interceptAssistantMessage(fn) {
    return this._intercept("assistant_message", fn);
  }

  _intercept(event, fn) {
    this._intercepts.set(event, fn);
    if (this._started) this._send({ type: "subscribe", intercept: [event] });
    return this;
  }

  /** fn(panelId, key, text) */
  onPanelKey(fn) {
    this._panelKey.push(fn);
    return this;
  }

  /** fn(panelId) when the user closed a panel (esc) */
  onPanelClose(fn) {
    this._panelClose.push(fn);
    return this;
  }

  /** fn() before the extension exits */
  onShutdown(fn) {
    this._shutdown.push(fn);
    return this;
  }

  // Things to send at any time.

  notify(message, level = "info") {
    if (!LEVELS.includes(level)) throw new Error(`level must be one of ${LEVELS.join(", ")}, not ${JSON.stringify(level)}`);
    this._send({ type: "notify", level, message: String(message) });
  }

  clearNotes() {
    this._send({ type: "clear_notes" });
  }

  /** Redraw an open panel: {id, title, lines, footer}. */
  renderPanel(panel) {
    const p = panelFrame(panel);
    this._send({ type: "panel_render", panel_id: p.id, title: p.title, lines: p.lines, footer: p.footer });
  }

  closePanel(panelId) {
    this._send({ type: "panel_close", panel_id: panelId });
  }

  /** A line in the extension's log (stderr). */
  log(...args) {
    console.error(...args);
  }

  // The frame loop.

  /** Say hello, register, serve frames until shutdown, then exit. */
  run() {
    const caps = [];
    if (this._commands.size) caps.push("commands");
    if (this._tools.size) caps.push("tools");
    if (this._events.size || this._intercepts.size) caps.push("events");
    this._send({ type: "hello", name: this.name, version: this.version, capabilities: caps });
    for (const { frame } of [...this._commands.values(), ...this._tools.values()]) this._send(frame);
    if (this._events.size || this._intercepts.size) {
      this._send({ type: "subscribe", events: [...this._events.keys()].sort(), intercept: [...this._intercepts.keys()].sort() });
    }
    this._started = true;
    this._send({ type: "ready" });
    const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
    let stopping = false;
    rl.on("line", (line) => {
      if (stopping || !line.trim()) return;
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        this.log(`zot-ext: skipped a line that is not JSON: ${line.slice(0, 200)}`);
        return;
      }
      if (msg === null || typeof msg !== "object" || Array.isArray(msg)) return;
      if (msg.type === "shutdown") {
        stopping = true;
        rl.close();
        this._exit(true);
        return;
      }
      this._dispatch(msg);
    });
    rl.on("close", () => {
      if (!stopping) {
        stopping = true;
        this._exit(false);
      }
    });
  }

  _dispatch(msg) {
    switch (msg.type) {
      case "hello_ack":
        this.info = msg;
        break;
      case "command_invoked":
        this._track(this._runCommand(msg));
        break;
      case "tool_call":
        this._track(this._runTool(msg));
        break;
      case "event_intercept":
        this._track(this._runIntercept(msg));
        break;
      case "event":
      case "panel_key":
      case "panel_close":
        this._ordered = this._ordered.then(() => this._runOrdered(msg));
        this._track(this._ordered);
        break;
      default:
        this.log(`zot-ext: ignored a frame of type ${JSON.stringify(msg.type)}`);
    }
  }

  _track(p) {
    this._inflight.add(p);
    p.finally(() => this._inflight.delete(p));
  }

  async _runOrdered(msg) {
    const what = msg.type === "event" ? msg.event : msg.type;
    try {
      if (msg.type === "event") {
        for (const fn of this._events.get(msg.event) ?? []) await fn(msg);
      } else if (msg.type === "panel_key") {
        for (const fn of this._panelKey) await fn(msg.panel_id ?? "", msg.key ?? "", msg.text ?? "");
      } else {
        for (const fn of this._panelClose) await fn(msg.panel_id ?? "");
      }
    } catch (e) {
      this.log(`zot-ext: ${what} handler failed: ${e?.stack ?? e}`);
    }
  }

  async _runCommand(msg) {
    const name = msg.name ?? "";
    let frame;
    try {
      const cmd = this._commands.get(name);
      if (!cmd) throw new Error(`this extension has no command /${name}`);
      let r = await cmd.fn(msg.args ?? "");
      if (r === undefined || r === null) r = noop();
      else if (typeof r === "string") r = display(r);
      if (typeof r !== "object" || !ACTIONS.includes(r.action ?? "noop")) {
        throw new Error("a command handler returns prompt(), insert(), display(), noop(), a string or nothing");
      }
      frame = { type: "command_response", id: msg.id, action: r.action ?? "noop" };
      if (frame.action !== "noop") frame[frame.action] = String(r.text ?? "");
      if (r.error) frame.error = String(r.error);
      if (r.panel) frame.open_panel = panelFrame(r.panel);
    } catch (e) {
      this.log(`zot-ext: command /${name} failed: ${e?.stack ?? e}`);
      frame = { type: "command_response", id: msg.id, action: "noop", error: `/${name} failed: ${describe(e)}` };
    }
    this._send(frame);
  }

  async _runTool(msg) {
    const name = msg.name ?? "";
    let frame;
    try {
      const tool = this._tools.get(name);
      if (!tool) throw new Error(`this extension has no tool ${name}`);
      const args = msg.args && typeof msg.args === "object" && !Array.isArray(msg.args) ? msg.args : {};
      let r = await tool.fn(args);
      if (typeof r === "string") r = textResult(r);
      else if (Array.isArray(r)) r = { content: r };
      else if (r === undefined || r === null) r = { content: [] };
      if (typeof r !== "object" || !Array.isArray(r.content)) {
        throw new Error("a tool handler returns a string, textResult(), errorResult(), imageResult() or a list of blocks");
      }
      frame = { type: "tool_result", id: msg.id, content: r.content, is_error: Boolean(r.isError ?? r.is_error) };
    } catch (e) {
      this.log(`zot-ext: tool ${name} failed: ${e?.stack ?? e}`);
      frame = { type: "tool_result", id: msg.id, content: [{ type: "text", text: `tool ${name} failed: ${describe(e)}` }], is_error: true };
    }
    this._send(frame);
  }

  async _runIntercept(msg) {
    const event = msg.event ?? "";
    let frame = { type: "event_intercept_response", id: msg.id };
    try {
      const fn = this._intercepts.get(event);
      let d;
      if (fn) {
        if (event === "tool_call") {
          const args = msg.tool_args && typeof msg.tool_args === "object" && !Array.isArray(msg.tool_args) ? msg.tool_args : {};
          d = await fn(msg.tool_name ?? "", args, msg.tool_id ?? "");
        } else if (event === "turn_start") {
          d = await fn(msg.step ?? 0);
        } else {
          d = await fn(msg.text ?? "");
        }
      }
      if (typeof d === "string" && event === "assistant_message") d = replace(d);
      if (d !== undefined && d !== null) {
        if (typeof d !== "object") throw new Error("an interceptor returns nothing, allow(), block(), rewrite() or replace()");
        if (d.block) frame.block = true;
        if (d.reason) frame.reason = String(d.reason);
        if (d.modifiedArgs !== undefined) {
          if (d.modifiedArgs === null || typeof d.modifiedArgs !== "object" || Array.isArray(d.modifiedArgs)) {
            throw new Error("rewrite() needs an object of arguments");
          }
          frame.modified_args = d.modifiedArgs;
        }
        if (d.replaceText) frame.replace_text = String(d.replaceText);
      }
    } catch (e) {
      this.log(`zot-ext: ${event} interceptor failed: ${e?.stack ?? e}`);
      const why = `${event} interceptor of ${this.name} failed: ${describe(e)}`;
      frame = { type: "event_intercept_response", id: msg.id };
      if (this.failClosed) Object.assign(frame, { block: true, reason: "blocked: " + why });
      else frame.reason = why + "; allowed";
    }
    this._send(frame);
  }

  async _exit(ack) {
    for (const fn of this._shutdown) {
      try {
        await fn();
      } catch (e) {
        this.log(`zot-ext: onShutdown failed: ${e?.stack ?? e}`);
      }
    }
    let timer;
    const grace = new Promise((resolve) => (timer = setTimeout(resolve, SHUTDOWN_GRACE_MS)));
    await Promise.race([Promise.allSettled([...this._inflight]), grace]);
    clearTimeout(timer);
    if (ack) this._send({ type: "shutdown_ack" });
    this._write("", () => process.exit(0));
  }

  _send(frame) {
    try {
      this._write(JSON.stringify(frame) + "\n");
    } catch {
      process.exit(0); // zot is gone
    }
  }
}

function panelFrame(p) {
  return { id: p.id, title: p.title ?? "", lines: (p.lines ?? []).map(String), footer: p.footer ?? "" };
}

function describe(e) {
  if (e instanceof Error) return e.message ? `${e.name}: ${e.message}` : e.name;
  return String(e);
}

// The manifest's fail_closed: zot starts extensions in their own
// directory, so ./extension.json is this extension's.
function manifestFailClosed() {
  try {
    return JSON.parse(readFileSync("extension.json", "utf8")).fail_closed === true;
  } catch {
    return false;
  }
}
