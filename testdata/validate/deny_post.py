#!/usr/bin/env python3
"""Denies HTTP requests that change things (curl -X POST/PUT/DELETE)."""
import json
import sys

req = json.load(sys.stdin)
p = req["params"]
method = p["flags"].get("X") or p["flags"].get("request") or "GET"
if p["command"] == "curl" and method.upper() in ("POST", "PUT", "DELETE"):
    url = p["args"][0] if p["args"] else ""
    result = {
        "status": "deny",
        "message": "%s requests are not allowed in production" % method.upper(),
        "fix_suggestion": "curl -X GET %s" % url,
    }
else:
    result = {"status": "allow"}
print(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": result}))
