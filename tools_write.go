package main

import (
	"context"
	"encoding/json"
	"fmt"
)

// The write tool: a whole file, created or replaced whole or not at all
// (tools_atomic.go), through what the jail checked (tools_open.go), or
// through the editor when one holds the files.

type writeTool struct{ env *ToolEnv }

func (writeTool) Name() string { return ToolWrite }

func (writeTool) Description() string {
	return "Write a whole file, creating it and its directories."
}

func (writeTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`)
}

func (t writeTool) Run(ctx context.Context, raw json.RawMessage, _ func(string)) ToolResult {
	args, err := ParseWriteArgs(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	p, content := args.Path, args.Content
	if ctx.Err() != nil {
		return errorResult("write %s: aborted before writing", p)
	}
	w, err := t.env.openWrite(ctx, p)
	if err != nil {
		return errorResult("%v", err)
	}
	defer w.Close()
	switch info := w.Info; {
	case info != nil && info.IsDir():
		return errorResult("write %s: it is a directory; choose a file path inside it", p)
	case info != nil && !info.Mode().IsRegular():
		// Renaming over a device or FIFO would replace it, not write to it.
		return errorResult("write %s: not a regular file (a device, pipe or socket); use bash to write to it", p)
	case info != nil:
		if err := w.replace(ctx, t.env, content); err != nil {
			return errorResult("write %s: %v (the file is unchanged)", p, err)
		}
		return textResult(fmt.Sprintf("Wrote %d bytes to %s (replaced)", len(content), p))
	}
	if write := t.env.editorWrite(); write != nil {
		if err := w.at.makeParents(); err != nil {
			return errorResult("write %s: create parent directories: %v (the file is unchanged)", p, err)
		}
		if err := write(ctx, w.Real, content); err != nil {
			return errorResult("write %s: the editor could not write it: %v", p, err)
		}
		return textResult(fmt.Sprintf("Wrote %d bytes to %s (new file)", len(content), p))
	}
	if err := w.Create([]byte(content), 0o644); err != nil {
		return errorResult("write %s: %v (the file is unchanged)", p, err)
	}
	return textResult(fmt.Sprintf("Wrote %d bytes to %s (new file)", len(content), p))
}
