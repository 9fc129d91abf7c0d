package main

import (
	"context"
	"encoding/json"
	"fmt"
)

// findTool lists the paths beneath a directory that match a glob
// (searchGlob), as tools_search.go walks them: .git is skipped, and the
// result is bounded (findMaxResults, searchMaxBytes, searchMaxNames).
type findTool struct{ env *ToolEnv }

func (findTool) Name() string { return ToolFind }

func (findTool) ReadOnly() bool { return true }

func (findTool) Description() string {
	return "Find files by glob: *.go matches names at any depth, src/**/*.go paths under path. Directories end in /."
}

func (findTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"]}`)
}

func (t findTool) Run(ctx context.Context, raw json.RawMessage, _ func(string)) ToolResult {
	args, err := ParseFindArgs(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	glob, err := compileSearchGlob(args.Pattern)
	if err != nil {
		return errorResult("find: pattern %v", err)
	}
	start, err := t.env.openSearch(ctx, ToolFind, args.Path)
	if err != nil {
		return errorResult("%v", err)
	}
	defer start.close()
	out := &searchOutput{}
	w := &searchWalk{env: t.env, start: start, skipGit: true}
	found := 0
	w.run(ctx, func(e searchEntry) (enter, stop bool) {
		if !glob.match(e.rel) {
			return true, false
		}
		if found == findMaxResults {
			w.cut = fmt.Sprintf("%d paths, the most one call returns", findMaxResults)
			return false, true
		}
		if !out.add(start.display(e.rel) + entryMark(e.info)) {
			w.cut = fmt.Sprintf("the result reached %s", sizeString(searchMaxBytes))
			return false, true
		}
		found++
		return true, false
	})
	if found == 0 {
		out.add(fmt.Sprintf("No paths under %s match %s.", start.given, args.Pattern))
	}
	return out.result(w.notes("narrow the pattern or path"))
}
