#!/usr/bin/env python3
"""A test extension whose behaviour a JSON spec (argv[1]) describes.

Spec keys (all optional):
  name          hello name (default "scripted")
  first_line    a raw first line instead of hello
  wait_ack      read hello_ack before sending frames (default: send at once)
  big_line      bytes of one oversize notify frame sent before frames
  frames        frames sent after hello
  ready         send ready after frames (default true)
  record        file that gets every frame received, one JSON per line
  intercept     {event: [rule, ...]}; the first rule whose "match" is a
                substring of the frame's JSON applies:
                  reply {..}  fields of event_intercept_response
                  delay s     sleep first
                  exit n      exit instead of answering
                  exit_after n  answer, then exit at once
                  raw "..."   answer with this line ({id} is the request's id)
                  silent      do not answer
                  late        answer only when the next frame comes in
                              (after the host gave up waiting for it)
  tools         {name: {text, echo, image, is_error, exit, delay, raw}}
  commands      {name: {reply fields; "{args}" in strings is replaced}}
  panels        answer panel_key with panel_render, close on the key q (rune "q")
  shutdown      "ack" (default) or "ignore"
  env_file      file that gets the process's environment as one JSON object,
                written before hello
"""
import base64, json, os, sys, time

spec = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
record = spec.get("record")


def emit(obj):
    line = obj if isinstance(obj, str) else json.dumps(obj)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def rec(frame):
    if record:
        with open(record, "a") as f:
            f.write(json.dumps(frame) + "\n")


if spec.get("env_file"):
    with open(spec["env_file"], "w") as f:
        json.dump(dict(os.environ), f)
if "first_line" in spec:
    emit(spec["first_line"])
else:
    emit({"type": "hello", "name": spec.get("name", "scripted"), "version": "0.0.1",
          "capabilities": ["commands", "tools", "events"]})
if spec.get("wait_ack"):
    rec(json.loads(sys.stdin.readline()))
if spec.get("big_line"):
    emit('{"type":"notify","level":"info","message":"' + "a" * spec["big_line"] + '"}')
for fr in spec.get("frames", []):
    emit(fr)
if spec.get("ready", True):
    emit({"type": "ready"})


def subst(v, args):
    if isinstance(v, str):
        return v.replace("{args}", args)
    if isinstance(v, dict):
        return {k: subst(x, args) for k, x in v.items()}
    return v


late = []


def act(rule, answer):
    if rule.get("late"):
        late.append(answer)
        return
    if "delay" in rule:
        time.sleep(rule["delay"])
    if "exit" in rule:
        os._exit(rule["exit"])
    if rule.get("silent"):
        return
    if "raw" in rule:
        emit(rule["raw"].replace("{id}", answer["id"]))
    else:
        emit(answer)
    if "exit_after" in rule:
        os._exit(rule["exit_after"])


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    rec(msg)
    for answer in late:
        emit(answer)
    late.clear()
    t = msg.get("type")
    if t == "event_intercept":
        text = json.dumps(msg)
        for rule in spec.get("intercept", {}).get(msg["event"], []):
            if rule.get("match", "") in text:
                act(rule, dict(rule.get("reply", {}), type="event_intercept_response", id=msg["id"]))
                break
        else:
            emit({"type": "event_intercept_response", "id": msg["id"]})
    elif t == "tool_call":
        rule = spec.get("tools", {}).get(msg["name"], {})
        content = [{"type": "text", "text": rule.get("text", "ok")}]
        if rule.get("echo"):
            content = [{"type": "text", "text": "args=" + json.dumps(msg["args"], sort_keys=True)}]
        if rule.get("image"):
            content.append({"type": "image", "mime_type": "image/png",
                            "data": base64.b64encode(b"\x89PNG fake").decode()})
        act(rule, {"type": "tool_result", "id": msg["id"], "content": content,
                   "is_error": rule.get("is_error", False)})
    elif t == "command_invoked":
        rule = spec.get("commands", {}).get(msg["name"], {"action": "noop"})
        reply = {k: v for k, v in rule.items() if k not in ("delay", "exit", "silent", "raw")}
        act(rule, dict(subst(reply, msg.get("args", "")), type="command_response", id=msg["id"]))
    elif t == "panel_key" and spec.get("panels"):
        if msg["key"] == "rune" and msg.get("text") == "q":
            emit({"type": "panel_close", "panel_id": msg["panel_id"]})
        else:
            emit({"type": "panel_render", "panel_id": msg["panel_id"], "title": "keys",
                  "lines": ["key=%s text=%s" % (msg["key"], msg.get("text", ""))]})
    elif t == "shutdown":
        if spec.get("shutdown", "ack") == "ack":
            emit({"type": "shutdown_ack"})
            break
