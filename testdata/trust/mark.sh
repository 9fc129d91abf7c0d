#!/bin/sh
# A program of the fixture project: it leaves a marker named $1 in the
# project's .markers directory when it starts, and exits.
mkdir -p "$(dirname "$0")/.markers"
: >"$(dirname "$0")/.markers/$1"
