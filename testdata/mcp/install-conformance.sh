#!/bin/sh
# Installs the MCP conformance suite (@modelcontextprotocol/conformance)
# and the Node 22 it needs into DIR (default: the user cache directory's
# zot-mcp-conformance, where the tests look when ZOT_MCP_CONFORMANCE is
# unset). Node 22 comes from npm as the package node-<os>-<arch>@22, into
# DIR only: the system's node is left alone. Needs npm and the npm
# registry; the tests skip, loudly, when the suite is not installed.
#
#   sh testdata/mcp/install-conformance.sh [DIR]
set -eu
suite=@modelcontextprotocol/conformance@0.1.16
if [ "$(uname)" = Darwin ]; then cache=$HOME/Library/Caches; else cache=${XDG_CACHE_HOME:-$HOME/.cache}; fi
dir=${1:-${ZOT_MCP_CONFORMANCE:-$cache/zot-mcp-conformance}}
if ! command -v npm >/dev/null 2>&1; then
	echo "install-conformance.sh: npm not found; the MCP conformance tests will be skipped" >&2
	exit 0
fi
node=$(sh "$(dirname "$0")/../node22-package.sh")
if [ -z "$node" ]; then
	echo "install-conformance.sh: no Node 22 package for $(uname -s)-$(uname -m); the MCP conformance tests will be skipped" >&2
	exit 0
fi
mkdir -p "$dir"
if [ -x "$dir/node_modules/.bin/node" ] && grep -qs "\"version\": \"${suite##*@}\"" "$dir/node_modules/@modelcontextprotocol/conformance/package.json"; then
	exit 0
fi
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$node" "$suite"
