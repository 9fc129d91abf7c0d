#!/usr/bin/env python3
"""hello-py: a slash command in plain Python, no SDK.

/hellopy [name] asks the agent to greet you (or name)."""
import json
import sys


def emit(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


emit({"type": "hello", "name": "hello-py", "version": "1.0.0", "capabilities": ["commands"]})
emit({"type": "register_command", "name": "hellopy", "description": "say hi (python)"})
emit({"type": "ready"})

for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "command_invoked":
        who = msg.get("args") or "me"
        emit({"type": "command_response", "id": msg["id"], "action": "prompt",
              "prompt": "Greet %s very briefly. Add one emoji." % who})
    elif msg["type"] == "shutdown":
        emit({"type": "shutdown_ack"})
        break
