#!/usr/bin/env python3
"""Drive `zot rpc` from Python: send one prompt, print the streamed answer
and the tool calls as they happen, then the cost.

    python3 zot_client.py "fix the failing test" [zot flags ...]

ZOT_BIN names the zot binary (default: zot on PATH). When
ZOTCORE_RPC_TOKEN is set, zot requires it in the first command, hello.
Standard library only; see docs/rpc.md for the protocol.
"""
import collections
import itertools
import json
import os
import subprocess
import sys


class ZotError(Exception):
    pass


class ZotClient:
    """One `zot rpc` process. request() sends a command and returns its
    response's data; events() yields the stream notifications."""

    def __init__(self, args=(), zot=None):
        self.proc = subprocess.Popen(
            [zot or os.environ.get("ZOT_BIN", "zot"), "rpc", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.ids = itertools.count(1)
        self.backlog = collections.deque()  # events read while waiting for a response

    def _read(self):
        # Binary mode: lines split on b"\n" only, as the protocol says.
        line = self.proc.stdout.readline()
        if not line:
            raise ZotError("zot rpc exited (exit status %s)" % self.proc.wait())
        return json.loads(line)

    def request(self, type_, **fields):
        msg_id = str(next(self.ids))
        line = json.dumps({"id": msg_id, "type": type_, **fields}) + "\n"
        self.proc.stdin.write(line.encode("utf-8"))
        self.proc.stdin.flush()
        while True:
            msg = self._read()
            if msg["type"] != "response":
                self.backlog.append(msg)
            elif msg.get("id") == msg_id:
                if not msg["success"]:
                    raise ZotError("%s: %s" % (type_, msg["error"]))
                return msg.get("data")

    def events(self):
        while True:
            yield self.backlog.popleft() if self.backlog else self._read()

    def close(self):
        """Closing stdin lets zot finish its work and exit."""
        self.proc.stdin.close()
        return self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: zot_client.py PROMPT [zot flags ...]")
    prompt, args = sys.argv[1], sys.argv[2:]
    out = sys.stdout
    failed = False
    with ZotClient(args) as zot:
        hello = {}
        if os.environ.get("ZOTCORE_RPC_TOKEN"):
            hello["token"] = os.environ["ZOTCORE_RPC_TOKEN"]
        info = zot.request("hello", **hello)
        if info["protocol_version"] != 1:
            sys.exit("zot speaks protocol %s; this client knows 1" % info["protocol_version"])
        zot.request("prompt", message=prompt)
        for ev in zot.events():
            kind = ev["type"]
            if kind == "text_delta":
                out.write(ev["delta"])
            elif kind == "tool_call":
                out.write("\n[tool] %s %s\n" % (ev["name"], json.dumps(ev["args"], separators=(",", ":"))))
            elif kind == "error":
                print("error: " + ev["message"], file=sys.stderr)
                failed = True
            elif kind == "done":
                break
            out.flush()
        usage = zot.request("get_state")["usage"]
        out.write("\ncost: $%.6f (%d in, %d out tokens)\n" % (usage["cost_usd"], usage["input"], usage["output"]))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
