#!/bin/sh
# Says hello, then floods stdout with answers nobody asked for.
echo '{"type":"hello","name":"flood","version":"1"}'
i=0
while [ $i -lt 400 ]; do
  echo '{"type":"tool_result","id":"x'$i'","content":[]}'
  i=$((i+1))
done
echo '{"type":"ready"}'
while IFS= read -r line; do
  case "$line" in
    *'"type":"shutdown"'*) exit 0 ;;
  esac
done
