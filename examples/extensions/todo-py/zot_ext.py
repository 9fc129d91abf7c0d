"""zot_ext: write zot extensions in Python.

One file, Python 3.8+ standard library only: copy it next to your
extension. It speaks zot's extension protocol v1 (docs/extensions.md) in
full: commands, tools, events, the three intercepts with their rewrites,
notes, panels and shutdown. Reference: docs/sdk.md.

    from zot_ext import Extension, prompt

    ext = Extension("hello", "1.0.0")

    @ext.command("hello", "say hi")
    def hello(args):
        return prompt("Greet " + (args or "me") + " in one short sentence.")

    ext.run()

How it runs:

- Commands, tools and intercepts each run on a thread of their own, so a
  slow handler never holds up the next frame. Events, panel keys and panel
  closes run one at a time, in the order they came, on one worker thread.
- A handler that raises answers with an error: a command with its error
  text, a tool with an is_error result, an interceptor with allow (or
  block, when the manifest says "fail_closed": true). The traceback goes
  to stderr, which zot keeps in the extension's log.
- stdout belongs to the protocol: the SDK sends print() and anything else
  written to sys.stdout to stderr.
- On shutdown (or when zot closes stdin) on_shutdown handlers run, work in
  flight gets up to 1.5 s to finish, shutdown_ack is sent and the process
  exits.
"""

import base64
import json
import os
import sys
import threading
import time
import traceback

__all__ = [
    "Extension", "Response", "Panel", "ToolResult", "Decision",
    "prompt", "insert", "display", "noop",
    "text_result", "error_result", "image_result",
    "allow", "block", "rewrite", "replace",
]

PROTOCOL_VERSION = 1
SHUTDOWN_GRACE = 1.5  # seconds of zot's 2 s that work in flight may take
EVENTS = ("session_start", "turn_start", "tool_call", "turn_end", "assistant_message")
LEVELS = ("info", "success", "warn", "error")


class Panel:
    """An overlay the user sees above the editor; keys go to on_panel_key."""

    def __init__(self, id, title="", lines=(), footer=""):
        self.id, self.title, self.lines, self.footer = id, title, list(lines), footer

    def frame(self):
        return {"id": self.id, "title": self.title, "lines": [str(l) for l in self.lines], "footer": self.footer}


class Response:
    """A command's answer: action prompt, insert, display or noop; error is
    shown whatever the action; panel opens an overlay."""

    def __init__(self, action="noop", text="", error="", panel=None):
        if action not in ("prompt", "insert", "display", "noop"):
            raise ValueError("action must be prompt, insert, display or noop, not %r" % (action,))
        self.action, self.text, self.error, self.panel = action, text, error, panel

    def frame(self, id):
        f = {"type": "command_response", "id": id, "action": self.action}
        if self.action != "noop":
            f[self.action] = self.text
        if self.error:
            f["error"] = self.error
        if self.panel is not None:
            f["open_panel"] = self.panel.frame()
        return f


def prompt(text, panel=None):
    """Submit text as the user's next message."""
    return Response("prompt", text, panel=panel)


def insert(text, panel=None):
    """Put text into the editor at the cursor."""
    return Response("insert", text, panel=panel)


def display(text, panel=None):
    """Show text as a note in the chat (no model call)."""
    return Response("display", text, panel=panel)


def noop(panel=None, error=""):
    """Nothing to do (the work is done, or a panel opens)."""
    return Response("noop", panel=panel, error=error)


class ToolResult:
    """A tool's answer: content blocks, and whether the call failed."""

    def __init__(self, content, is_error=False):
        self.content, self.is_error = content, is_error

    def frame(self, id):
        return {"type": "tool_result", "id": id, "content": self.content, "is_error": bool(self.is_error)}


def text_result(text, is_error=False):
    return ToolResult([{"type": "text", "text": str(text)}], is_error)


def error_result(text):
    return text_result(text, True)


def image_result(data, mime_type="image/png", text=None):
    """An image (bytes), with an optional caption."""
    content = [{"type": "image", "mime_type": mime_type, "data": base64.b64encode(data).decode("ascii")}]
    if text:
        content.insert(0, {"type": "text", "text": text})
    return ToolResult(content)


class Decision:
    """An interceptor's answer. None from a handler means allow."""

    def __init__(self, block=False, reason="", modified_args=None, replace_text=""):
        self.block, self.reason = block, reason
        self.modified_args, self.replace_text = modified_args, replace_text

    def fields(self):
        f = {}
        if self.block:
            f["block"] = True
        if self.reason:
            f["reason"] = self.reason
        if self.modified_args is not None:
            if not isinstance(self.modified_args, dict):
                raise TypeError("modified_args must be a dict, not %s" % type(self.modified_args).__name__)
            f["modified_args"] = self.modified_args
        if self.replace_text:
            f["replace_text"] = self.replace_text
        return f


def allow(reason=""):
    return Decision(reason=reason)


def block(reason=""):
    """Refuse: the tool call does not run, the turn does not start, the
    message is hidden."""
    return Decision(block=True, reason=reason)


def rewrite(args, reason=""):
    """tool_call only: run the call with these arguments instead."""
    return Decision(modified_args=args, reason=reason)


def replace(text):
    """assistant_message only: the user sees text instead."""
    return Decision(replace_text=text)


class Extension:
    """One extension: register handlers, then run()."""

    def __init__(self, name, version="0.0.0", fail_closed=None):
        self.name, self.version = name, version
        self.info = {}  # hello_ack: cwd, data_dir, extension_dir, provider, model…
        self._hello_ack = threading.Event()
        self._commands, self._tools = {}, {}
        self._events = {}  # event name -> [handler]
        self._intercepts = {}  # event name -> handler
        self._panel_key, self._panel_close, self._shutdown = [], [], []
        self._fail_closed = _manifest_fail_closed() if fail_closed is None else bool(fail_closed)
        self._out = sys.stdout
        sys.stdout = sys.stderr  # print() must not break the protocol
        self._write_lock = threading.Lock()
        self._started = False
        self._busy = 0  # requests in flight and events waiting or running
        self._idle = threading.Condition()
        self._queue, self._queue_cv = [], threading.Condition()

    # Registration. Each works before run() and while running.

    def command(self, name, description=""):
        """Decorator: fn(args: str) -> Response | str (display) | None (noop)."""
        name = name.lstrip("/")

        def register(fn):
            self._commands[name] = (fn, {"type": "register_command", "name": name, "description": description})
            self._send_if_started(self._commands[name][1])
            return fn
        return register

    def tool(self, name, description="", schema=None):
        """Decorator: fn(args: dict) -> str | ToolResult | list of blocks."""
        schema = schema if schema is not None else {"type": "object", "properties": {}}

        def register(fn):
            self._tools[name] = (fn, {"type": "register_tool", "name": name, "description": description, "schema": schema})
            self._send_if_started(self._tools[name][1])
            return fn
        return register

    def on(self, *events):
        """Decorator: fn(event: dict) for each named event (session_start,
        turn_start, tool_call, turn_end, assistant_message)."""
        for ev in events:
            if ev not in EVENTS:
                raise ValueError("unknown event %r (events: %s)" % (ev, ", ".join(EVENTS)))

        def register(fn):
            for ev in events:
                self._events.setdefault(ev, []).append(fn)
            self._send_if_started({"type": "subscribe", "events": list(events)})
            return fn
        return register

    def intercept_tool_call(self, fn):
        """Decorator: fn(tool_name, args: dict, tool_id) -> None | block() | rewrite()."""
        return self._intercept("tool_call", fn)

    def intercept_turn_start(self, fn):
        """Decorator: fn(step: int) -> None | block()."""
        return self._intercept("turn_start", fn)

    def intercept_assistant_message(self, fn):
        """Decorator: fn(text) -> None | str (replacement) | replace() | block()."""
        return self._intercept("assistant_message", fn)

    def _intercept(self, event, fn):
        self._intercepts[event] = fn
        self._send_if_started({"type": "subscribe", "intercept": [event]})
        return fn

    def on_panel_key(self, fn):
        """Decorator: fn(panel_id, key, text) for keys pressed in a panel."""
        self._panel_key.append(fn)
        return fn

    def on_panel_close(self, fn):
        """Decorator: fn(panel_id) when the user closed a panel (esc)."""
        self._panel_close.append(fn)
        return fn

    def on_shutdown(self, fn):
        """Decorator: fn() before the extension exits."""
        self._shutdown.append(fn)
        return fn

    # Things to send at any time.

    def notify(self, message, level="info"):
        """A one-line note for the user: level info, success, warn or error."""
        if level not in LEVELS:
            raise ValueError("level must be one of %s, not %r" % (", ".join(LEVELS), level))
        self._send({"type": "notify", "level": level, "message": str(message)})

    def clear_notes(self):
        """Retract every note this extension showed."""
        self._send({"type": "clear_notes"})

    def render_panel(self, panel):
        """Redraw an open panel (a Panel with the id it was opened with)."""
        f = panel.frame()
        self._send({"type": "panel_render", "panel_id": f["id"], "title": f["title"], "lines": f["lines"], "footer": f["footer"]})

    def close_panel(self, panel_id):
        self._send({"type": "panel_close", "panel_id": panel_id})

    def log(self, *args):
        """A line in the extension's log (stderr)."""
        print(*args, file=sys.stderr, flush=True)

    # The frame loop.

    def run(self):
        """Say hello, register, serve frames until shutdown, then exit."""
        caps = []
        if self._commands:
            caps.append("commands")
        if self._tools:
            caps.append("tools")
        if self._events or self._intercepts:
            caps.append("events")
        self._send({"type": "hello", "name": self.name, "version": self.version, "capabilities": caps})
        for _, frame in list(self._commands.values()) + list(self._tools.values()):
            self._send(frame)
        if self._events or self._intercepts:
            self._send({"type": "subscribe", "events": sorted(self._events), "intercept": sorted(self._intercepts)})
        self._started = True
        threading.Thread(target=self._event_worker, daemon=True).start()
        self._send({"type": "ready"})
        shutdown = False
        stdin = sys.stdin.buffer
        for raw in stdin:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                self.log("zot_ext: skipped a line that is not JSON: %.200s" % line)
                continue
            if not isinstance(msg, dict):
                continue
            if msg.get("type") == "shutdown":
                shutdown = True
                break
            self._dispatch(msg)
        self._exit(shutdown)

    def _dispatch(self, msg):
        t = msg.get("type")
        if t == "hello_ack":
            self.info = msg
            self._hello_ack.set()
        elif t == "command_invoked":
            self._spawn(self._run_command, msg)
        elif t == "tool_call":
            self._spawn(self._run_tool, msg)
        elif t == "event_intercept":
            self._spawn(self._run_intercept, msg)
        elif t in ("event", "panel_key", "panel_close"):
            self._enqueue(msg)
        else:
            self.log("zot_ext: ignored a frame of type %r" % t)

    def _spawn(self, fn, msg):
        with self._idle:
            self._busy += 1

        def work():
            try:
                fn(msg)
            finally:
                self._done()
        threading.Thread(target=work, daemon=True).start()

    def _done(self):
        with self._idle:
            self._busy -= 1
            self._idle.notify_all()

    def _enqueue(self, msg):
        with self._idle:
            self._busy += 1
        with self._queue_cv:
            self._queue.append(msg)
            self._queue_cv.notify()

    def _event_worker(self):
        while True:
            with self._queue_cv:
                while not self._queue:
                    self._queue_cv.wait()
                msg = self._queue.pop(0)
            try:
                self._run_ordered(msg)
            except Exception:
                self.log("zot_ext: %s handler failed:\n%s" % (msg.get("event") or msg.get("type"), traceback.format_exc()))
            finally:
                self._done()

    def _run_ordered(self, msg):
        t = msg.get("type")
        if t == "event":
            for fn in self._events.get(msg.get("event"), []):
                fn(msg)
        elif t == "panel_key":
            for fn in self._panel_key:
                fn(msg.get("panel_id", ""), msg.get("key", ""), msg.get("text", ""))
        elif t == "panel_close":
            for fn in self._panel_close:
                fn(msg.get("panel_id", ""))

    def _run_command(self, msg):
        id, name = msg.get("id"), msg.get("name", "")
        fn = self._commands.get(name, (None,))[0]
        try:
            if fn is None:
                raise LookupError("this extension has no command /%s" % name)
            r = fn(msg.get("args", ""))
            if r is None:
                r = noop()
            elif isinstance(r, str):
                r = display(r)
            elif not isinstance(r, Response):
                raise TypeError("a command handler returns a Response, a str or None, not %s" % type(r).__name__)
            frame = r.frame(id)
        except Exception as e:
            self.log("zot_ext: command /%s failed:\n%s" % (name, traceback.format_exc()))
            frame = {"type": "command_response", "id": id, "action": "noop", "error": "/%s failed: %s" % (name, _describe(e))}
        self._send(frame)

    def _run_tool(self, msg):
        id, name = msg.get("id"), msg.get("name", "")
        fn = self._tools.get(name, (None,))[0]
        try:
            if fn is None:
                raise LookupError("this extension has no tool %s" % name)
            args = msg.get("args")
            r = fn(args if isinstance(args, dict) else {})
            if isinstance(r, str):
                r = text_result(r)
            elif isinstance(r, list):
                r = ToolResult(r)
            elif r is None:
                r = ToolResult([])
            elif not isinstance(r, ToolResult):
                raise TypeError("a tool handler returns a str, a ToolResult or a list of blocks, not %s" % type(r).__name__)
            frame = r.frame(id)
        except Exception as e:
            self.log("zot_ext: tool %s failed:\n%s" % (name, traceback.format_exc()))
            frame = error_result("tool %s failed: %s" % (name, _describe(e))).frame(id)
        self._send(frame)

    def _run_intercept(self, msg):
        id, event = msg.get("id"), msg.get("event", "")
        fn = self._intercepts.get(event)
        frame = {"type": "event_intercept_response", "id": id}
        try:
            d = None
            if fn is not None:
                if event == "tool_call":
                    args = msg.get("tool_args")
                    d = fn(msg.get("tool_name", ""), args if isinstance(args, dict) else {}, msg.get("tool_id", ""))
                elif event == "turn_start":
                    d = fn(msg.get("step", 0))
                else:
                    d = fn(msg.get("text", ""))
            if isinstance(d, str) and event == "assistant_message":
                d = replace(d)
            if d is not None:
                if not isinstance(d, Decision):
                    raise TypeError("an interceptor returns None or a Decision (allow, block, rewrite, replace), not %s" % type(d).__name__)
                frame.update(d.fields())
        except Exception as e:
            self.log("zot_ext: %s interceptor failed:\n%s" % (event, traceback.format_exc()))
            frame = {"type": "event_intercept_response", "id": id}
            why = "%s interceptor of %s failed: %s" % (event, self.name, _describe(e))
            if self._fail_closed:
                frame.update(block=True, reason="blocked: " + why)
            else:
                frame["reason"] = why + "; allowed"
        self._send(frame)

    def _exit(self, shutdown):
        for fn in self._shutdown:
            try:
                fn()
            except Exception:
                self.log("zot_ext: on_shutdown failed:\n%s" % traceback.format_exc())
        deadline = time.monotonic() + SHUTDOWN_GRACE
        with self._idle:
            while self._busy > 0 and time.monotonic() < deadline:
                self._idle.wait(deadline - time.monotonic())
        if shutdown:
            self._send({"type": "shutdown_ack"})
        try:
            self._out.flush()
        finally:
            os._exit(0)

    def _send_if_started(self, frame):
        if self._started:
            self._send(frame)

    def _send(self, frame):
        line = json.dumps(frame, separators=(",", ":")) + "\n"
        with self._write_lock:
            try:
                self._out.write(line)
                self._out.flush()
            except (BrokenPipeError, OSError):
                os._exit(0)  # zot is gone


def _describe(e):
    text = str(e)
    return "%s: %s" % (type(e).__name__, text) if text else type(e).__name__


def _manifest_fail_closed():
    """The manifest's fail_closed: zot starts extensions in their own
    directory, so ./extension.json is this extension's."""
    try:
        with open("extension.json") as f:
            return json.load(f).get("fail_closed") is True
    except (OSError, ValueError, AttributeError):
        return False
