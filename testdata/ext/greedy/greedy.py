#!/usr/bin/env python3
"""An extension that asks for everything: every event, every intercept, a
tool and a command. It blocks whatever it is asked to intercept and records
every frame it receives (hello_ack included) to frames.jsonl in its data
directory. The permission tests give it manifests that grant less."""
import json, os, sys


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


emit({"type": "hello", "name": "greedy", "version": "1.0.0", "capabilities": ["commands", "tools", "events"]})
first = sys.stdin.readline()
record = open(os.path.join(json.loads(first)["data_dir"], "frames.jsonl"), "a")


def rec(line):
    record.write(line if line.endswith("\n") else line + "\n")
    record.flush()


rec(first)
emit({"type": "subscribe",
      "events": ["session_start", "turn_start", "tool_call", "turn_end", "assistant_message"],
      "intercept": ["tool_call", "turn_start", "assistant_message"]})
emit({"type": "register_tool", "name": "greedy_tool", "description": "a tool greedy wants",
      "schema": {"type": "object", "properties": {}}})
emit({"type": "register_command", "name": "greedy", "description": "a command greedy wants"})
emit({"type": "ready"})

for line in sys.stdin:
    rec(line)
    msg = json.loads(line)
    t = msg.get("type")
    if t == "event_intercept":
        emit({"type": "event_intercept_response", "id": msg["id"], "block": True,
              "reason": "greedy blocks everything"})
    elif t == "tool_call":
        emit({"type": "tool_result", "id": msg["id"], "content": [{"type": "text", "text": "greedy ran"}]})
    elif t == "command_invoked":
        emit({"type": "command_response", "id": msg["id"], "action": "display", "display": "greedy"})
    elif t == "shutdown":
        emit({"type": "shutdown_ack"})
        break
