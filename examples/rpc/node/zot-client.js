#!/usr/bin/env node
// Drive `zot rpc` from Node: send one prompt, print the streamed answer and
// the tool calls as they happen, then the cost.
//
//   node zot-client.js "fix the failing test" [zot flags ...]
//
// ZOT_BIN names the zot binary (default: zot on PATH). When
// ZOTCORE_RPC_TOKEN is set, zot requires it in the first command, hello.
// No dependencies; see docs/rpc.md for the protocol.
'use strict';

const { spawn } = require('node:child_process');
const readline = require('node:readline');

class ZotClient {
  constructor(args = [], zot = process.env.ZOT_BIN || 'zot') {
    this.proc = spawn(zot, ['rpc', ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.nextId = 1;
    this.pending = new Map(); // id -> {resolve, reject}
    this.listeners = [];
    this.exited = new Promise((resolve) => this.proc.on('close', (code) => resolve(code)));
    this.exited.then((code) => {
      for (const p of this.pending.values()) p.reject(new Error(`zot rpc exited (exit status ${code})`));
      this.pending.clear();
    });
    readline.createInterface({ input: this.proc.stdout, crlfDelay: Infinity }).on('line', (line) => this.onLine(line));
  }

  onLine(line) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch (err) {
      console.error(`zot: not JSON: ${line}`);
      return;
    }
    if (msg.type === 'response') {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.success) p.resolve(msg.data);
      else p.reject(new Error(`${msg.command}: ${msg.error}`));
      return;
    }
    for (const fn of this.listeners) fn(msg);
  }

  // request sends a command and resolves with its response's data.
  request(type, fields = {}) {
    const id = String(this.nextId++);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.proc.stdin.write(JSON.stringify({ id, type, ...fields }) + '\n');
    });
  }

  onEvent(fn) {
    this.listeners.push(fn);
  }

  // close ends stdin: zot finishes its work and exits.
  close() {
    this.proc.stdin.end();
    return this.exited;
  }
}

async function main() {
  const [prompt, ...args] = process.argv.slice(2);
  if (!prompt) {
    console.error('usage: zot-client.js PROMPT [zot flags ...]');
    process.exit(2);
  }
  const zot = new ZotClient(args);
  let failed = false;
  try {
    const hello = process.env.ZOTCORE_RPC_TOKEN ? { token: process.env.ZOTCORE_RPC_TOKEN } : {};
    const info = await zot.request('hello', hello);
    if (info.protocol_version !== 1) throw new Error(`zot speaks protocol ${info.protocol_version}; this client knows 1`);
    const done = new Promise((resolve) => {
      zot.onEvent((ev) => {
        switch (ev.type) {
          case 'text_delta':
            process.stdout.write(ev.delta);
            break;
          case 'tool_call':
            process.stdout.write(`\n[tool] ${ev.name} ${JSON.stringify(ev.args)}\n`);
            break;
          case 'error':
            console.error(`error: ${ev.message}`);
            failed = true;
            break;
          case 'done':
            resolve();
            break;
        }
      });
    });
    await zot.request('prompt', { message: prompt });
    await done;
    const { usage } = await zot.request('get_state');
    process.stdout.write(`\ncost: $${usage.cost_usd.toFixed(6)} (${usage.input} in, ${usage.output} out tokens)\n`);
  } catch (err) {
    console.error(err.message);
    failed = true;
  }
  await zot.close();
  process.exitCode = failed ? 1 : 0;
}

main();
