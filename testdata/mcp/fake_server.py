#!/usr/bin/env python3
"""A fake MCP stdio server for zot's fault tests.

Usage: fake_server.py MODE [STATE_DIR]

MODE picks a misbehaviour:
  normal     a well-behaved server
  noinit     never answers initialize
  slowinit   answers initialize after a second (a server that starts slowly)
  oldversion answers initialize with protocol version 1999-01-01
  garbage    writes non-JSON and broken JSON-RPC lines among its answers
  paged      lists its tools two per page
  stubborn   ignores stdin EOF and SIGTERM (only SIGKILL stops it)
  orphan     its crash tool starts a child that ignores SIGTERM and
             outlives it (pid in STATE_DIR/child), then exits with status 4
  mute       its crash tool closes stdout and keeps running

STATE_DIR, when given, receives pid (this process's pid), calls (one line
per tools/call), cancelled (one line per notifications/cancelled) and caps
(the client's capabilities at initialize).

Tools: echo, read_file, crash, big, slow, progress, ask, elicit, change,
fail, env. elicit asks the client a form question (elicitation/create),
whether or not the client offered elicitation, and returns its answer.
"""
import json
import time
import os
import select
import signal
import subprocess
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "normal"
STATE = sys.argv[2] if len(sys.argv) > 2 else None

TOOLS = [
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "read_file", "description": "Read a file of the working directory.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "crash", "description": "Exit in the middle of the call.", "inputSchema": {"type": "object"}},
    {"name": "big", "description": "Return 5 MB of text.", "inputSchema": {"type": "object"}},
    {"name": "slow", "description": "Never answer; note a cancellation.", "inputSchema": {"type": "object"}},
    {"name": "deaf", "description": "Stop reading stdin for a minute.", "inputSchema": {"type": "object"}},
    {"name": "progress", "description": "Report progress three times.", "inputSchema": {"type": "object"}},
    {"name": "ask", "description": "Ask the client roots/list, sampling and ping.", "inputSchema": {"type": "object"}},
    {"name": "elicit", "description": "Ask the user where to deploy.", "inputSchema": {"type": "object"}},
    {"name": "change", "description": "Add a tool and announce list_changed.", "inputSchema": {"type": "object"}},
    {"name": "fail", "description": "Return an error result.", "inputSchema": {"type": "object"}},
    {"name": "env", "description": "Return the cwd and FAKE_ENV.", "inputSchema": {"type": "object"}},
]

backlog = []  # messages read while waiting for a reply


def note(name, line):
    if STATE:
        with open(os.path.join(STATE, name), "a") as f:
            f.write(line + "\n")


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def read(timeout=None):
    """Next message from the client, or None at timeout."""
    if backlog:
        return backlog.pop(0)
    if timeout is not None:
        ready, _, _ = select.select([sys.stdin], [], [], timeout)
        if not ready:
            return None
    line = sys.stdin.readline()
    if not line:
        if MODE == "stubborn":
            signal.pause()
        sys.exit(0)
    return json.loads(line)


def result(msg, res):
    send({"jsonrpc": "2.0", "id": msg["id"], "result": res})


def text(s, is_error=False):
    return {"content": [{"type": "text", "text": s}], "isError": is_error}


DEPLOY_FORM = {
    "mode": "form",
    "message": "Where should this deploy go?",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "target": {"type": "string", "title": "Target", "enum": ["staging", "production"], "default": "staging"},
            "replicas": {"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 9, "default": 2},
            "note": {"type": "string", "title": "Note", "description": "Why now?", "minLength": 1},
        },
        "required": ["target", "note"],
    },
}


def ask(rid, method, params=None):
    """Send a request to the client and wait for its reply."""
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
    while True:
        m = read()
        if m.get("id") == rid and "method" not in m:
            return m
        backlog.append(m)


def call(msg):
    p = msg.get("params") or {}
    name = p.get("name")
    args = p.get("arguments") or {}
    token = (p.get("_meta") or {}).get("progressToken")
    note("calls", name)
    if name == "echo":
        result(msg, text(args.get("text", "")))
    elif name == "read_file":
        try:
            with open(args.get("path", "")) as f:
                result(msg, text(f.read()))
        except OSError as e:
            result(msg, text(str(e), True))
    elif name == "crash":
        sys.stdout.flush()
        if MODE == "orphan":
            child = subprocess.Popen(["sleep", "600"],
                                     preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN))
            note("child", str(child.pid))
            os._exit(4)
        if MODE == "mute":
            os.close(1)
            note("mute", "yes")
            time.sleep(600)
        os._exit(3)
    elif name == "big":
        result(msg, text("x" * (5 << 20)))
    elif name == "deaf":
        note("deaf", "yes")
        time.sleep(60)
    elif name == "slow":
        while True:
            m = read(60)
            if m is None:
                return
            if m.get("method") == "notifications/cancelled":
                cp = m.get("params") or {}
                note("cancelled", "%s %s" % (cp.get("requestId"), cp.get("reason")))
                return
            handle(m)
    elif name == "progress":
        for i in (1, 2, 3):
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": token, "progress": i, "total": 3, "message": "step %d" % i}})
        result(msg, text("done"))
    elif name == "ask":
        replies = [ask("s1", "roots/list"), ask(2, "sampling/createMessage"), ask("s3", "ping")]
        result(msg, text(json.dumps(replies)))
    elif name == "elicit":
        reply = ask("e1", "elicitation/create", DEPLOY_FORM)
        result(msg, text(json.dumps(reply.get("result") or reply.get("error"), sort_keys=True)))
    elif name == "change":
        TOOLS.append({"name": "added", "description": "Appeared later.", "inputSchema": {"type": "object"}})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        result(msg, text("changed"))
    elif name == "fail":
        result(msg, text("it went wrong", True))
    elif name == "env":
        result(msg, text("%s %s" % (os.getcwd(), os.environ.get("FAKE_ENV", ""))))
    else:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": "unknown tool " + str(name)}})


def handle(msg):
    method = msg.get("method")
    if method is None:
        return  # a reply nobody waits for
    if method == "initialize":
        if MODE == "noinit":
            return
        if MODE == "slowinit":
            time.sleep(1)
        version = msg["params"]["protocolVersion"]
        note("caps", json.dumps(msg["params"].get("capabilities"), sort_keys=True))
        if MODE == "oldversion":
            version = "1999-01-01"
        result(msg, {"protocolVersion": version,
                     "capabilities": {"tools": {"listChanged": True}, "logging": {}},
                     "serverInfo": {"name": "fake", "version": "1.0"}})
    elif method == "notifications/initialized":
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "logger": "fake", "data": "hello from the fake server"}})
        if MODE == "garbage":
            sys.stdout.write("Starting server on stdio...\n")
            sys.stdout.write("{not json\n")
            sys.stdout.write("[]\n")
            sys.stdout.write('{"jsonrpc":"1.0","id":1,"result":{}}\n')
            sys.stdout.write('{"jsonrpc":"2.0","id":999,"result":{}}\n')
            sys.stdout.write("\n")
            sys.stdout.flush()
    elif method == "tools/list":
        cursor = (msg.get("params") or {}).get("cursor")
        if MODE == "paged":
            start = int(cursor) if cursor else 0
            page = {"tools": TOOLS[start:start + 2]}
            if start + 2 < len(TOOLS):
                page["nextCursor"] = str(start + 2)
            result(msg, page)
        else:
            result(msg, {"tools": TOOLS})
    elif method == "tools/call":
        call(msg)
    elif method == "ping":
        result(msg, {})
    elif "id" in msg:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no method " + method}})


def main():
    if MODE == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    note("pid", str(os.getpid()))
    sys.stderr.write("fake server %s starting\n" % MODE)
    sys.stderr.flush()
    while True:
        handle(read())


main()
