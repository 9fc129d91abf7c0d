#!/usr/bin/env python3
"""todo: a to-do list you and the model share, written with the Python SDK.

    /todo                 a panel: up/down move, enter ticks, d deletes, q closes
    /todo add <text>      add an item
    /todo done <n>        tick (or untick) item n
    /todo clear           drop the ticked items
    /todo list            the list as a note

The model gets three tools: todo_list, todo_add {text} and todo_done
{number}. The list lives in todo.json in the extension's data directory.
"""
import json
import os
import sys
import threading

# zot_ext.py beside this file (Python looks there first) is a copy of
# zot's sdk/python/zot_ext.py: the example works wherever it is installed.
sys.dont_write_bytecode = True  # no __pycache__ in the extension's directory
from zot_ext import Extension, Panel, display, error_result, noop  # noqa: E402

ext = Extension("todo", "1.0.0")
lock = threading.Lock()
cursor = {}  # panel id -> selected row

FOOTER = "up/down move · enter ticks · d deletes · q closes"


def path():
    return os.path.join(ext.info["data_dir"], "todo.json")


def load():
    try:
        with open(path()) as f:
            items = json.load(f)
        return [i for i in items if isinstance(i, dict) and isinstance(i.get("text"), str)]
    except (OSError, ValueError):
        return []


def save(items):
    """Whole or not at all: a temporary file, then a rename."""
    tmp = path() + ".tmp"
    with open(tmp, "w") as f:
        json.dump(items, f, indent=1)
    os.replace(tmp, path())


def render(items, selected=None):
    if not items:
        return ["(nothing to do)"]
    lines = []
    for n, item in enumerate(items, 1):
        mark = "x" if item.get("done") else " "
        pointer = ">" if selected == n - 1 else " "
        lines.append("%s %d. [%s] %s" % (pointer, n, mark, item["text"]))
    return lines


def toggle(items, n):
    if not 1 <= n <= len(items):
        raise ValueError("there is no item %d (the list has %d)" % (n, len(items)))
    items[n - 1]["done"] = not items[n - 1].get("done")
    return items[n - 1]


@ext.command("todo", "your to-do list (add <text>, done <n>, clear, list)")
def todo(args):
    verb, _, rest = args.partition(" ")
    with lock:
        items = load()
        if verb == "add" and rest.strip():
            items.append({"text": rest.strip(), "done": False})
            save(items)
            return display("added #%d: %s" % (len(items), rest.strip()))
        if verb == "done":
            item = toggle(items, int(rest))
            save(items)
            return display(("ticked: " if item["done"] else "unticked: ") + item["text"])
        if verb == "clear":
            save([i for i in items if not i.get("done")])
            return display("dropped the ticked items")
        if verb == "list":
            return display("\n".join(render(items)))
        if verb:
            return display("usage: /todo [add <text> | done <n> | clear | list]")
        cursor["todo"] = 0
        return noop(panel=Panel("todo", "to-do", render(items, 0), FOOTER))


@ext.on_panel_key
def key(panel_id, key, text):
    with lock:
        items = load()
        row = cursor.get(panel_id, 0)
        if key == "rune" and text == "q":
            ext.close_panel(panel_id)
            return
        if key == "up":
            row = max(row - 1, 0)
        elif key == "down":
            row = min(row + 1, max(len(items) - 1, 0))
        elif key == "enter" and items:
            toggle(items, row + 1)
            save(items)
        elif key == "rune" and text == "d" and items:
            del items[row]
            save(items)
            row = min(row, max(len(items) - 1, 0))
        cursor[panel_id] = row
        ext.render_panel(Panel(panel_id, "to-do", render(items, row), FOOTER))


@ext.on_panel_close
def closed(panel_id):
    cursor.pop(panel_id, None)


@ext.tool("todo_list", "List the user's to-do items, numbered, [x] when done.")
def todo_list(args):
    with lock:
        return "\n".join(render(load()))


@ext.tool("todo_add", "Add an item to the user's to-do list.",
          {"type": "object", "properties": {"text": {"type": "string", "description": "the item"}}, "required": ["text"]})
def todo_add(args):
    text = str(args.get("text", "")).strip()
    if not text:
        return error_result('todo_add needs {"text": "<item>"}')
    with lock:
        items = load()
        items.append({"text": text, "done": False})
        save(items)
    ext.notify("the model added #%d: %s" % (len(items), text))
    return "added #%d" % len(items)


@ext.tool("todo_done", "Tick (or untick) item number of the user's to-do list.",
          {"type": "object", "properties": {"number": {"type": "integer", "minimum": 1}}, "required": ["number"]})
def todo_done(args):
    with lock:
        items = load()
        item = toggle(items, int(args.get("number", 0)))
        save(items)
    return ("ticked: " if item["done"] else "unticked: ") + item["text"]


ext.run()
