#!/usr/bin/env python3
"""guard: a tool_call interceptor.

- refuses dangerous bash commands (rm -rf, sudo, mkfs, dd to a device, the
  fork bomb, chmod -R 777, writes to a disk device); the model sees why;
- rewrites risky ones into safer ones: git push --force / -f becomes
  git push --force-with-lease;
- writes one audit line per event and per decision to audit.jsonl in its
  data_dir (see hello_ack).
"""
import json
import os
import re
import sys
import time

DANGER = [(re.compile(p), why) for p, why in [
    (r"\brm\s+(-\w*r\w*f|-\w*f\w*r|-r\s+-f|-f\s+-r)", "rm -rf"),
    (r"\bsudo\b", "sudo"),
    (r"\bmkfs(\.\w+)?\b", "mkfs"),
    (r"\bdd\b[^|;&]*\bof=/dev/", "dd to a device"),
    (r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:", "a fork bomb"),
    (r"\bchmod\s+-R\s+0?777\b", "chmod -R 777"),
    (r">\s*/dev/(sd|nvme|disk)", "a write to a disk device"),
]]
FORCE_PUSH = re.compile(r"(\bgit\s+push\b[^;&|\n]*?)\s(?:--force|-f)(?=\s|$)")

audit_path = None


def emit(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def audit(entry):
    if audit_path:
        entry = dict(entry, time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        with open(audit_path, "a") as f:
            f.write(json.dumps(entry) + "\n")


def decide(frame):
    """The answer to an event_intercept for a tool call."""
    answer = {"type": "event_intercept_response", "id": frame["id"]}
    if frame.get("tool_name") != "bash":
        return answer
    command = (frame.get("tool_args") or {}).get("command", "")
    for pattern, why in DANGER:
        if pattern.search(command):
            answer.update(block=True, reason='refused by guard: the command matches the danger pattern "%s"' % why)
            return answer
    safer = FORCE_PUSH.sub(r"\1 --force-with-lease", command)
    if safer != command:
        args = dict(frame["tool_args"], command=safer)
        answer.update(modified_args=args, reason="force push made --force-with-lease")
    return answer


emit({"type": "hello", "name": "guard", "version": "1.0.0", "capabilities": ["events"]})
emit({"type": "subscribe",
      "events": ["session_start", "turn_start", "tool_call", "turn_end", "assistant_message"],
      "intercept": ["tool_call"]})
emit({"type": "ready"})

for line in sys.stdin:
    frame = json.loads(line)
    kind = frame["type"]
    if kind == "hello_ack":
        os.makedirs(frame["data_dir"], exist_ok=True)
        audit_path = os.path.join(frame["data_dir"], "audit.jsonl")
    elif kind == "event":
        audit({k: v for k, v in frame.items() if k != "type"})
    elif kind == "event_intercept":
        answer = decide(frame)
        decision = "block" if answer.get("block") else "rewrite" if "modified_args" in answer else "allow"
        audit({"decision": decision, "tool_name": frame.get("tool_name"),
               "tool_args": frame.get("tool_args"), "reason": answer.get("reason", "")})
        emit(answer)
    elif kind == "shutdown":
        emit({"type": "shutdown_ack"})
        break
