// A client of zot acp built on @agentclientprotocol/sdk, for zot's tests.
//
//   node client.mjs SCENARIO   (ZOT_ACP_CMD: the agent's argv as JSON;
//                               ZOT_ACP_CWD: the session's directory;
//                               ZOT_ACP_SESSION: a session to load;
//                               ZOT_ACP_MCP: an MCP server for session/new, JSON;
//                               NODE_PATH-style ZOT_ACP_SDK: where the SDK is)
//
// It runs the scenario and prints one JSON line per thing it saw, in
// order: {"update":…} for each session/update, {"permission":…} for each
// permission request and {"answer":optionId} for its answer, {"fs":…} for
// each file request, {"stop":…} for each prompt's answer, {"error":…}
// for a failed request, {"session":id}. The Go test judges the lines.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const sdk = await import(pathToFileURL(join(process.env.ZOT_ACP_SDK, "dist/v1/stable/acp.js")).href);
const scenario = process.argv[2];
const cwd = process.env.ZOT_ACP_CWD;
const argv = JSON.parse(process.env.ZOT_ACP_CMD);
const t0 = Date.now();
const out = (v) => process.stdout.write(JSON.stringify({ ...v, ms: Date.now() - t0 }) + "\n");

const agent = spawn(argv[0], argv.slice(1), { cwd, stdio: ["pipe", "pipe", "inherit"] });
const stream = sdk.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

// answers: what the permission handler picks, in order; the last repeats.
const answers = (process.env.ZOT_ACP_ANSWERS || "allow-once").split(",");
let asked = 0;
let firstChunk;
const sawChunk = new Promise((resolve) => (firstChunk = resolve));
// The editor's buffers, for fs delegation: unsaved text the disk lacks.
const buffers = new Map();
if (process.env.ZOT_ACP_BUFFER) {
	const [path, text] = JSON.parse(process.env.ZOT_ACP_BUFFER);
	buffers.set(path, text);
}

const app = sdk
	.client({ name: "zot-test-client" })
	.onNotification("session/update", ({ params }) => {
		out({ update: params.update });
		if (params.update.sessionUpdate === "agent_message_chunk") firstChunk();
	})
	.onRequest("session/request_permission", ({ params }) => {
		out({ permission: params });
		const want = answers[Math.min(asked++, answers.length - 1)];
		out({ answer: want });
		return { outcome: { outcome: "selected", optionId: want } };
	})
	.onRequest("fs/read_text_file", ({ params }) => {
		out({ fs: "read", path: params.path });
		return { content: buffers.has(params.path) ? buffers.get(params.path) : readFileSync(params.path, "utf8") };
	})
	.onRequest("fs/write_text_file", ({ params }) => {
		out({ fs: "write", path: params.path, content: params.content });
		buffers.set(params.path, params.content);
		writeFileSync(params.path, params.content); // the editor saves it
		return {};
	});

const fsCaps = process.env.ZOT_ACP_BUFFER ? { readTextFile: true, writeTextFile: true } : { readTextFile: false, writeTextFile: false };

async function prompt(ctx, sessionId, text) {
	try {
		const r = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
		out({ stop: r.stopReason });
		return r;
	} catch (e) {
		out({ error: String(e && e.message ? e.message : e) });
	}
}

await app.connectWith(stream, async (ctx) => {
	const init = await ctx.request("initialize", { protocolVersion: 1, clientCapabilities: { fs: fsCaps, terminal: false } });
	out({ init });
	const mcpServers = process.env.ZOT_ACP_MCP ? [JSON.parse(process.env.ZOT_ACP_MCP)] : [];
	let sessionId = process.env.ZOT_ACP_SESSION;
	if (scenario === "load") {
		const r = await ctx.request("session/load", { sessionId, cwd, mcpServers });
		out({ loaded: r });
		return;
	}
	const s = await ctx.request("session/new", { cwd, mcpServers });
	sessionId = s.sessionId;
	out({ session: sessionId, modes: s.modes, configOptions: s.configOptions });
	switch (scenario) {
		case "prompt":
			await prompt(ctx, sessionId, "do it");
			break;
		case "cancel": {
			const p = prompt(ctx, sessionId, "talk slowly");
			await sawChunk;
			await ctx.notify("session/cancel", { sessionId });
			await p;
			await prompt(ctx, sessionId, "and now?");
			break;
		}
		default:
			throw new Error("unknown scenario " + scenario);
	}
});
out({ done: true });
agent.stdin.end();
await new Promise((resolve) => agent.on("exit", resolve));
out({ exited: true });
