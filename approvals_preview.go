package main

import (
	"context"
	"path/filepath"
	"strings"
)

// FileChange is the change an edit or write call would make to one file,
// whole: the text before (OldText, "" with IsNew for a file write would
// create) and after. Path is the file's absolute path, symlinks
// resolved.
type FileChange struct {
	Path    string
	OldText string
	NewText string
	IsNew   bool
	name    string // the path as the diff heads it
	spans   []editSpan
}

// previewFileChange is the unified diff an edit or write call would make,
// as the edit tool writes it after the change, so the approval shows the
// same lines the result will: "" when the call cannot be read or would
// fail (the tool then says why). It only reads.
func previewFileChange(env *ToolEnv, call ToolCall) string {
	c, ok := PreviewFileChange(context.Background(), env, call)
	if !ok || c.OldText == c.NewText {
		return ""
	}
	return unifiedDiff(c.name, c.OldText, c.NewText, c.spans)
}

// PreviewFileChange is the change an edit or write call would make, read
// as the tool would read the file (through the editor when it holds the
// files); ok is false when the call cannot be read, would fail, or would
// change nothing. It only reads.
func PreviewFileChange(ctx context.Context, env *ToolEnv, call ToolCall) (c FileChange, ok bool) {
	var path, updated string
	var edits []TextEdit
	switch call.Name {
	case ToolEdit:
		a, err := ParseEditArgs(call.Args)
		if err != nil {
			return c, false
		}
		path, edits = a.Path, a.Edits
	case ToolWrite:
		a, err := ParseWriteArgs(call.Args)
		if err != nil {
			return c, false
		}
		path, updated = a.Path, strings.ReplaceAll(a.Content, "\r\n", "\n")
	default:
		return c, false
	}
	w, err := env.openWrite(ctx, path)
	if err != nil {
		return c, false
	}
	defer w.Close()
	old := ""
	switch info := w.Info; {
	case info == nil && call.Name == ToolEdit:
		return c, false
	case info == nil:
		c.IsNew = true
	case !info.Mode().IsRegular() || info.Size() > editMaxBytes:
		return c, false
	default:
		text, err := w.text(ctx, env, editMaxBytes)
		if err != nil {
			return c, false
		}
		old, _ = lfOnly(strings.TrimPrefix(text, utf8BOM))
	}
	var spans []editSpan
	if call.Name == ToolEdit {
		var problem string
		if spans, problem = locateEdits(old, edits); problem != "" {
			return c, false
		}
		updated = applySpans(old, spans)
	} else {
		spans = []editSpan{{index: 1, start: 0, end: len(old), newText: updated}}
	}
	if updated == old && !c.IsNew {
		return c, false
	}
	c.Path, c.OldText, c.NewText = w.Real, old, updated
	c.name, c.spans = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(path)), "/"), spans
	return c, true
}
