#!/usr/bin/env node
// The client side of @modelcontextprotocol/conformance, played by zot. The
// suite runs this with the scenario's server URL as the last argument,
// the scenario in MCP_CONFORMANCE_SCENARIO and, for some scenarios, the
// credentials it set up in MCP_CONFORMANCE_CONTEXT. This file only
// translates those into one zot invocation: an mcp.json naming the server
// (with the credentials as ${VAR}s) in a fresh ZOT_HOME, and the zot mcp
// command a user would run. Everything the suite checks is zot's doing.
//
//   ZOT_BIN                  the zot binary (default: zot on PATH)
//   ZOT_CONFORMANCE_RESULTS  a directory where zot's exit status goes, as
//                            <scenario, / as _>.exit: the suite's --suite
//                            mode keeps only its checks
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const url = process.argv.at(-1);
const scenario = process.env.MCP_CONFORMANCE_SCENARIO || '';
const ctx = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || '{}');
const here = dirname(fileURLToPath(import.meta.url));

// The client ID metadata document the suite's authorization server takes
// as this client's id, given where the scenario is about it: in
// auth/offline-access-scope the suite would try to fetch it, and this
// machine sends nothing off the loopback.
const oauth = {};
if (scenario === 'auth/basic-cimd') oauth.clientMetadataUrl = 'https://conformance-test.local/client-metadata.json';
const env = {};
if (ctx.client_id) oauth.clientId = ctx.client_id;
if (ctx.client_secret) {
  oauth.clientSecret = '${CONFORMANCE_CLIENT_SECRET}';
  env.CONFORMANCE_CLIENT_SECRET = ctx.client_secret;
}
if (ctx.private_key_pem) {
  oauth.privateKey = '${CONFORMANCE_PRIVATE_KEY}';
  env.CONFORMANCE_PRIVATE_KEY = ctx.private_key_pem;
  if (ctx.signing_algorithm) oauth.signingAlg = ctx.signing_algorithm;
}
if (scenario.startsWith('auth/client-credentials-')) oauth.grant = 'client_credentials';
if (ctx.idp_token_endpoint) {
  oauth.grant = 'jwt-bearer';
  oauth.idp = { tokenEndpoint: ctx.idp_token_endpoint, clientId: ctx.idp_client_id, idToken: '${CONFORMANCE_ID_TOKEN}' };
  env.CONFORMANCE_ID_TOKEN = ctx.idp_id_token;
}

// What a user would run to exercise what the scenario's server offers.
const commands = {
  initialize: ['tools', 'conf'],
  tools_call: ['call', 'conf', 'add_numbers', '{"a": 5, "b": 3}'],
  // A user who takes whatever the server's form fills in.
  'elicitation-sep1034-client-defaults': ['call', '--elicit', 'accept', 'conf', 'test_client_elicitation_defaults'],
  'sse-retry': ['call', 'conf', 'test_reconnection'],
};
const args = commands[scenario] || (scenario.startsWith('auth/') ? ['call', 'conf', 'test-tool'] : null);
if (!args) {
  console.error(`conformance-client: no zot command for scenario ${JSON.stringify(scenario)}`);
  process.exit(2);
}

const home = mkdtempSync(join(tmpdir(), 'zot-conformance-'));
const config = join(home, 'mcp.json');
writeFileSync(config, JSON.stringify({ mcpServers: { conf: { type: 'http', url, oauth } } }, null, 2));
const zot = spawn(process.env.ZOT_BIN || 'zot', ['mcp', ...args, '--no-mcp', '--mcp-config', config], {
  stdio: 'inherit',
  env: { ...process.env, ...env, ZOT_HOME: home, BROWSER: join(here, 'follow-redirects.mjs') },
});
// The suite stops a client that runs past its timeout: zot goes with it.
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => zot.kill(sig));
zot.on('exit', (code, signal) => {
  rmSync(home, { recursive: true, force: true });
  const status = code ?? 128;
  if (process.env.ZOT_CONFORMANCE_RESULTS) {
    writeFileSync(join(process.env.ZOT_CONFORMANCE_RESULTS, scenario.replaceAll('/', '_') + '.exit'), `${status}${signal ? ' ' + signal : ''}\n`);
  }
  process.exit(status);
});
