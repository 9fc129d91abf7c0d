package main

import (
	"context"
	"encoding/json"
	"fmt"
)

// lsTool lists one directory, in name order, marking what is not a
// regular file as ls -F does (entryMark); what the permission rules or
// the sandbox keep from read is not listed (tools_search.go). At most
// lsMaxEntries names, with a note when there are more.
type lsTool struct{ env *ToolEnv }

func (lsTool) Name() string { return ToolLs }

func (lsTool) ReadOnly() bool { return true }

func (lsTool) Description() string {
	return "List a directory (default: the working directory). Directories end in /, symlinks in @."
}

func (lsTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)
}

func (t lsTool) Run(ctx context.Context, raw json.RawMessage, _ func(string)) ToolResult {
	args, err := ParseLsArgs(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	start, err := t.env.openSearch(ctx, ToolLs, args.Path)
	if err != nil {
		return errorResult("%v", err)
	}
	defer start.close()
	out := &searchOutput{}
	w := &searchWalk{env: t.env, start: start}
	shown, more := 0, 0
	w.run(ctx, func(e searchEntry) (enter, stop bool) {
		if shown == lsMaxEntries || out.full || !out.add(e.name+entryMark(e.info)) {
			more++
			return false, false
		}
		shown++
		return false, false
	})
	var notes []string
	if more > 0 {
		notes = append(notes, fmt.Sprintf("[%d more %s not shown; find with a pattern narrows]", more, pluralNoun(more, "entry", "entries")))
	}
	notes = append(notes, w.notes("list a subdirectory")...)
	if shown == 0 && more == 0 {
		out.add(fmt.Sprintf("(%s is empty)", start.given))
	}
	return out.result(notes)
}
