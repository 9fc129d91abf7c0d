#!/bin/sh
# Refuses any command that mentions "forbidden", and leaves the plugin
# root it was given (in its environment) in the project for the test.
input=$(cat)
printf '%s\n' "$CLAUDE_PLUGIN_ROOT" > "$CLAUDE_PROJECT_DIR/plugin-root.txt"
case "$input" in
*forbidden*) echo "demo guard: forbidden commands are refused" >&2; exit 2 ;;
esac
exit 0
