#!/usr/bin/env python3
"""A 14-tool MCP stdio server, an issue tracker's, for zot's tool search.

Usage: tracker_server.py [STATE_DIR]

Its tools have the size of a real server's (descriptions and schemas of
some 6 KB in all: about 1,700 tokens), so that with a small local model's
context they fill the request. Each tools/call answers with the tool's
name and arguments, and is noted as a line in STATE_DIR/calls when given.
"""
import json
import os
import sys

STATE = sys.argv[1] if len(sys.argv) > 1 else None


def obj(props, required=()):
    return {"type": "object", "properties": props, "required": list(required)}


S = {"type": "string"}
PROJECT = {"type": "string", "description": "The project key, such as CORE or WEB; see list_projects."}
ISSUE = {"type": "string", "description": "The issue key, such as CORE-123: the project key, a dash and the number."}
STATE_ENUM = {"type": "string", "enum": ["open", "in_progress", "review", "closed"],
              "description": "The workflow state."}

TOOLS = [
    {"name": "list_projects", "description": "List the projects of the tracker the user may see, with their keys, names and leads.",
     "inputSchema": obj({"include_archived": {"type": "boolean", "description": "Also list archived projects."}})},
    {"name": "list_issues", "description": "List the issues of a project, newest first, filtered by state, assignee or label. Returns at most 50 issues per page; pass the cursor of the previous page for more.",
     "inputSchema": obj({"project": PROJECT, "state": STATE_ENUM, "assignee": {"type": "string", "description": "A user name, or 'me'."},
                         "label": S, "cursor": {"type": "string", "description": "The next_cursor of the previous page."}}, ["project"])},
    {"name": "get_issue", "description": "Get one issue whole: title, description, state, assignee, labels, milestone, links and the last 20 comments.",
     "inputSchema": obj({"issue": ISSUE}, ["issue"])},
    {"name": "create_issue", "description": "Create an issue in a project. The description takes Markdown. Returns the new issue's key.",
     "inputSchema": obj({"project": PROJECT, "title": {"type": "string", "description": "A one-line summary."},
                         "description": {"type": "string", "description": "What is wrong or wanted, in Markdown."},
                         "labels": {"type": "array", "items": S, "description": "Labels to set; unknown ones are created."},
                         "assignee": {"type": "string", "description": "A user name; none leaves it unassigned."}}, ["project", "title"])},
    {"name": "update_issue", "description": "Change an issue's title, description, state or milestone. Fields left out stay as they are.",
     "inputSchema": obj({"issue": ISSUE, "title": S, "description": S, "state": STATE_ENUM,
                         "milestone": {"type": "string", "description": "A milestone name; see list_milestones."}}, ["issue"])},
    {"name": "add_comment", "description": "Add a comment to an issue, in Markdown. Mentions (@name) notify the users named.",
     "inputSchema": obj({"issue": ISSUE, "body": {"type": "string", "description": "The comment, in Markdown."}}, ["issue", "body"])},
    {"name": "list_comments", "description": "List the comments of an issue, oldest first, 50 per page.",
     "inputSchema": obj({"issue": ISSUE, "cursor": S}, ["issue"])},
    {"name": "search_issues", "description": "Search the issues of every project the user may see by words in their title, description and comments. Supports quoted phrases and -word to exclude.",
     "inputSchema": obj({"query": {"type": "string", "description": "The words to look for."},
                         "project": PROJECT, "state": STATE_ENUM,
                         "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many results at most (default 20)."}}, ["query"])},
    {"name": "assign_issue", "description": "Assign an issue to a user, or unassign it when no user is given.",
     "inputSchema": obj({"issue": ISSUE, "assignee": {"type": "string", "description": "A user name, 'me', or empty to unassign."}}, ["issue"])},
    {"name": "close_issue", "description": "Close an issue with a resolution, and optionally a comment saying why.",
     "inputSchema": obj({"issue": ISSUE, "resolution": {"type": "string", "enum": ["fixed", "duplicate", "wontfix", "invalid"]},
                         "comment": S}, ["issue", "resolution"])},
    {"name": "reopen_issue", "description": "Reopen a closed issue; its resolution is cleared.",
     "inputSchema": obj({"issue": ISSUE, "comment": S}, ["issue"])},
    {"name": "list_labels", "description": "List the labels of a project, with their colours and how many open issues carry each.",
     "inputSchema": obj({"project": PROJECT}, ["project"])},
    {"name": "set_labels", "description": "Add labels to an issue and remove others, in one change.",
     "inputSchema": obj({"issue": ISSUE, "add": {"type": "array", "items": S}, "remove": {"type": "array", "items": S}}, ["issue"])},
    {"name": "list_milestones", "description": "List the milestones of a project with their due dates and how many of their issues are still open.",
     "inputSchema": obj({"project": PROJECT, "include_closed": {"type": "boolean"}}, ["project"])},
]


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def result(msg, res):
    send({"jsonrpc": "2.0", "id": msg["id"], "result": res})


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        method = msg.get("method")
        if method == "initialize":
            result(msg, {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                         "serverInfo": {"name": "tracker", "version": "1.0"}})
        elif method == "tools/list":
            result(msg, {"tools": TOOLS})
        elif method == "tools/call":
            p = msg.get("params") or {}
            if STATE:
                with open(os.path.join(STATE, "calls"), "a") as f:
                    f.write(json.dumps(p, sort_keys=True) + "\n")
            text = "%s %s" % (p.get("name"), json.dumps(p.get("arguments") or {}, sort_keys=True))
            result(msg, {"content": [{"type": "text", "text": text}]})
        elif method == "ping":
            result(msg, {})
        elif "id" in msg and method is not None:
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no method " + method}})


main()
