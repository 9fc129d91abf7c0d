#!/usr/bin/env python3
"""Allows everything and appends each request, with the names of its
environment variables, to the file named by its first argument."""
import json
import os
import sys

req = json.load(sys.stdin)
req["environ"] = sorted(os.environ)
req["process_cwd"] = os.getcwd()
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(req) + "\n")
print(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": {"status": "allow"}}))
