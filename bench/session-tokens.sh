#!/usr/bin/env bash
# Input tokens of one scripted 12-request coding session (issue 26): runs
# BenchmarkCodingSessionTokens once and prints its figures. Extra arguments
# go to go test.
#
#   bench/session-tokens.sh
#
# input-tok is bytes/4 of every request as zot sent it; cached-input-tok is
# the same session billed with Anthropic's prompt caching simulated (reads
# 0.1×, writes 1.25×, 1,024-token minimum, 20-block lookback). The
# *-16KiB-bash figures cut each bash result to 4 KiB of head and 12 KiB of
# tail in the recorded requests. ZOT_BENCH_VERBOSE=1 prints each request's
# size, breakpoints and cache reads and writes.
set -eu
cd "$(dirname "$0")/.."
go test -run '^$' -bench '^BenchmarkCodingSessionTokens$' -benchtime 1x -v "$@" .
