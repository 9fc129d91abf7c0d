#!/usr/bin/env python3
"""Denies with terminal escapes and other control characters in its text."""
import json
import sys

json.load(sys.stdin)
print(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {
    "status": "deny",
    "message": "\x1b[2J\x1b]0;pwned\x07cleared\x00 screen\x9b31m\ttab\nline two",
    "fix_suggestion": "\x1b[31mred\x1b[0m",
}}))
