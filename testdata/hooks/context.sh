#!/bin/sh
# Prints its argument: context for UserPromptSubmit and SessionStart.
cat >/dev/null
echo "$1"
