#!/usr/bin/env python3
"""A Claude Code hook whose behaviour a JSON spec file (argv[1]) describes.

Spec keys (all optional):
  record    file that gets the JSON read on stdin, one line per run
  rules     [{"match": "...", ...}]: the first rule whose match is a
            substring of stdin overrides the keys below
  touch     create this file
  wait_for  wait (up to 10 s) until this file exists
  sleep     seconds to sleep
  stdout    a string printed as is, or an object printed as JSON
  stderr    printed on stderr
  exit      exit status (default 0)
"""
import json, os, sys, time

spec = json.load(open(sys.argv[1]))
data = sys.stdin.read()
for rule in spec.get("rules", []):
    if rule["match"] in data:
        spec = {**spec, **rule}
        break
if spec.get("record"):
    with open(spec["record"], "a") as f:
        f.write(data.strip() + "\n")
if spec.get("touch"):
    open(spec["touch"], "w").close()
if spec.get("wait_for"):
    deadline = time.time() + 10
    while not os.path.exists(spec["wait_for"]) and time.time() < deadline:
        time.sleep(0.02)
if spec.get("sleep"):
    time.sleep(spec["sleep"])
out = spec.get("stdout")
if out is not None:
    sys.stdout.write(out if isinstance(out, str) else json.dumps(out))
if spec.get("stderr"):
    sys.stderr.write(spec["stderr"])
sys.exit(spec.get("exit", 0))
