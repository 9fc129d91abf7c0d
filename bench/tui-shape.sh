#!/usr/bin/env bash
# The shape of the TUI's code: methods per receiver type (how much hangs on
# *TUI, how much on its components) and the functions over 80 lines, read
# with go/ast from tui*.go by TestTUIComponents.
#
#   bench/tui-shape.sh
set -eu
cd "$(dirname "$0")/.."
go test -count=1 -run '^TestTUIComponents$' -v . | sed -n 's/^ *tui_shape_test.go:[0-9]*: //p'
