#!/bin/sh
# Installs the real MCP servers the tests run against into DIR (default:
# the user cache directory's zot-mcp-servers, where the tests look when
# ZOT_MCP_SERVERS is unset). Needs npm and the npm registry; the tests skip,
# loudly, when the servers are not installed.
#
#   sh testdata/mcp/install-servers.sh [DIR]
set -eu
# The tests' default: Go's os.UserCacheDir() + /zot-mcp-servers.
if [ "$(uname)" = Darwin ]; then cache=$HOME/Library/Caches; else cache=${XDG_CACHE_HOME:-$HOME/.cache}; fi
dir=${1:-${ZOT_MCP_SERVERS:-$cache/zot-mcp-servers}}
if ! command -v npm >/dev/null 2>&1; then
	echo "install-servers.sh: npm not found; the MCP tests against real servers will be skipped" >&2
	exit 0
fi
mkdir -p "$dir"
if [ -x "$dir/node_modules/.bin/mcp-server-filesystem" ] && [ -x "$dir/node_modules/.bin/mcp-server-everything" ]; then
	exit 0
fi
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
	@modelcontextprotocol/server-filesystem \
	@modelcontextprotocol/server-everything
