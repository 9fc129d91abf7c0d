#!/bin/sh
# Installs the ACP clients the tests drive zot acp with into DIR (default:
# the user cache directory's zot-acp-clients, where the tests look when
# ZOT_ACP_CLIENTS is unset): @agentclientprotocol/sdk, which
# testdata/acp/client.mjs is built on, acpx, a headless ACP client, and
# the Node 22 they run on.
# Needs npm and the npm registry; the tests skip, loudly, without them.
#
#   sh testdata/acp/install-clients.sh [DIR]
set -eu
if [ "$(uname)" = Darwin ]; then cache=$HOME/Library/Caches; else cache=${XDG_CACHE_HOME:-$HOME/.cache}; fi
dir=${1:-${ZOT_ACP_CLIENTS:-$cache/zot-acp-clients}}
if ! command -v npm >/dev/null 2>&1; then
	echo "install-clients.sh: npm not found; the ACP client tests will be skipped" >&2
	exit 0
fi
# acpx wants Node 22.13 or newer: Node 22 from npm, into DIR only, where
# npm has it for this machine; elsewhere the tests use the system's node.
node=$(sh "$(dirname "$0")/../node22-package.sh")
mkdir -p "$dir"
if [ -f "$dir/node_modules/@agentclientprotocol/sdk/package.json" ] && [ -f "$dir/node_modules/acpx/dist/cli.js" ] &&
	{ [ -z "$node" ] || [ -x "$dir/node_modules/.bin/node" ]; }; then
	exit 0
fi
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
	@agentclientprotocol/sdk@2 \
	acpx@0.19 \
	$node
