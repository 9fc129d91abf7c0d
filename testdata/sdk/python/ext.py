#!/usr/bin/env python3
"""The SDK test extension (see ../README.md), written with sdk/python."""
import os
import sys
import threading

sys.dont_write_bytecode = True  # keep the repository clean of __pycache__
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "sdk", "python"))
from zot_ext import Extension, Panel, block, display, image_result, noop, prompt, replace, rewrite  # noqa: E402

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")

ext = Extension("sdk-python", "1.0.0")
released = threading.Event()
count = {"p1": 0}


@ext.command("echo", "echo the arguments as a prompt")
def echo(args):
    return prompt("echo: " + args)


# /release is registered before /wait: `zot ext check` invokes commands in
# that order, and so finds /wait released instead of waiting its 10 s out.
@ext.command("release", "release /wait")
def release(args):
    released.set()


@ext.command("wait", "wait for /release")
def wait(args):
    ext.notify("waiting")
    return display("released" if released.wait(10) else "timed out")


@ext.command("boom", "throws")
def boom(args):
    raise RuntimeError("boom")


@ext.command("notes", "a note, then none")
def notes(args):
    ext.notify("hello", "warn")
    ext.clear_notes()


@ext.command("panel", "a counter panel")
def panel(args):
    count["p1"] = 0
    return noop(panel=Panel("p1", "counter", ["0"], "+ adds, q closes"))


@ext.on_panel_key
def key(panel_id, key, text):
    if key == "rune" and text == "+":
        count[panel_id] += 1
        ext.render_panel(Panel(panel_id, "counter", [str(count[panel_id])], "+ adds, q closes"))
    elif key == "rune" and text == "q":
        ext.close_panel(panel_id)


@ext.on_panel_close
def closed(panel_id):
    ext.notify("closed " + panel_id)


@ext.command("info", "protocol version and data directory")
def info(args):
    return display("%s %s" % (ext.info["protocol_version"], os.path.basename(ext.info["data_dir"])))


@ext.tool("add", "Add two numbers.", {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]})
def add(args):
    total = args["a"] + args["b"]
    return str(int(total) if total == int(total) else total)


@ext.tool("fail", "Always fails.")
def fail(args):
    raise ValueError("tool broke")


@ext.tool("pic", "A tiny picture.")
def pic(args):
    return image_result(PNG)


@ext.on("session_start")
def started(event):
    ext.notify("session started")


@ext.on("turn_end")
def turn_end(event):
    ext.notify("turn_end " + event["stop"])


@ext.intercept_tool_call
def guard(tool, args, tool_id):
    if tool != "bash":
        return None
    command = args.get("command", "")
    if "rm -rf" in command:
        return block("no rm -rf")
    if command == "ls":
        return rewrite({"command": "ls -la"})
    if command == "throw":
        raise RuntimeError("interceptor broke")
    return None


@ext.intercept_turn_start
def budget(step):
    return block("turn budget: 4") if step >= 5 else None


@ext.intercept_assistant_message
def redact(text):
    if "throw" in text:
        raise RuntimeError("redactor broke")
    if "HIDE" in text:
        return block()
    if "SECRET" in text:
        return replace(text.replace("SECRET", "[redacted]"))
    return None


@ext.on_shutdown
def bye():
    with open(os.path.join(ext.info["data_dir"], "shutdown.txt"), "w") as f:
        f.write("bye")


ext.run()
