// The SDK test extension (see ../README.md), written with sdk/js.
import { writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { Extension, block, display, imageResult, noop, prompt, replace, rewrite } from "../../../sdk/js/zot-ext.mjs";

const PNG = Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082",
  "hex",
);

const ext = new Extension("sdk-js", "1.0.0");
let release;
const released = new Promise((resolve) => (release = resolve));
const count = { p1: 0 };
const counter = (id) => ({ id, title: "counter", lines: [count[id]], footer: "+ adds, q closes" });

ext.command("echo", "echo the arguments as a prompt", (args) => prompt("echo: " + args));
// /release is registered before /wait: `zot ext check` invokes commands in
// that order, and so finds /wait released instead of waiting its 10 s out.
ext.command("release", "release /wait", () => release());
ext.command("wait", "wait for /release", async () => {
  ext.notify("waiting");
  const timeout = new Promise((resolve) => setTimeout(() => resolve("timed out"), 10000));
  return display(await Promise.race([released.then(() => "released"), timeout]));
});
ext.command("boom", "throws", () => {
  throw new Error("boom");
});
ext.command("notes", "a note, then none", () => {
  ext.notify("hello", "warn");
  ext.clearNotes();
});
ext.command("panel", "a counter panel", () => {
  count.p1 = 0;
  return noop(counter("p1"));
});
ext.onPanelKey((panelId, key, text) => {
  if (key === "rune" && text === "+") {
    count[panelId]++;
    ext.renderPanel(counter(panelId));
  } else if (key === "rune" && text === "q") {
    ext.closePanel(panelId);
  }
});
ext.onPanelClose((panelId) => ext.notify("closed " + panelId));
ext.command("info", "protocol version and data directory", () =>
  display(`${ext.info.protocol_version} ${basename(ext.info.data_dir)}`),
);

ext.tool(
  "add",
  "Add two numbers.",
  { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
  (args) => String(args.a + args.b),
);
ext.tool("fail", "Always fails.", undefined, async () => {
  throw new Error("tool broke");
});
ext.tool("pic", "A tiny picture.", undefined, () => imageResult(PNG));

ext.on("session_start", () => ext.notify("session started"));
ext.on("turn_end", (event) => ext.notify("turn_end " + event.stop));

ext.interceptToolCall((tool, args) => {
  if (tool !== "bash") return;
  const command = args.command ?? "";
  if (command.includes("rm -rf")) return block("no rm -rf");
  if (command === "ls") return rewrite({ command: "ls -la" });
  if (command === "throw") throw new Error("interceptor broke");
});
ext.interceptTurnStart((step) => (step >= 5 ? block("turn budget: 4") : undefined));
ext.interceptAssistantMessage(async (text) => {
  if (text.includes("throw")) throw new Error("redactor broke");
  if (text.includes("HIDE")) return block();
  if (text.includes("SECRET")) return replace(text.replaceAll("SECRET", "[redacted]"));
});

ext.onShutdown(() => writeFileSync(join(ext.info.data_dir, "shutdown.txt"), "bye"));

ext.run();
