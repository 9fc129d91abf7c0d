package main

import (
	"path/filepath"
	"strings"
)

// previewFileChange is the unified diff an edit or write call would make,
// as the edit tool writes it after the change, so the approval shows the
// same lines the result will: "" when the call cannot be read or would
// fail (the tool then says why). It only reads.
func previewFileChange(env *ToolEnv, call ToolCall) string {
	var path, updated string
	var edits []TextEdit
	switch call.Name {
	case ToolEdit:
		a, err := ParseEditArgs(call.Args)
		if err != nil {
			return ""
		}
		path, edits = a.Path, a.Edits
	case ToolWrite:
		a, err := ParseWriteArgs(call.Args)
		if err != nil {
			return ""
		}
		path, updated = a.Path, strings.ReplaceAll(a.Content, "\r\n", "\n")
	default:
		return ""
	}
	w, err := env.openWrite(path)
	if err != nil {
		return ""
	}
	defer w.Close()
	old := ""
	switch info := w.Info; {
	case info == nil && call.Name == ToolEdit:
		return ""
	case info == nil:
	case !info.Mode().IsRegular() || info.Size() > editMaxBytes:
		return ""
	default:
		data, err := w.ReadAll(editMaxBytes)
		if err != nil {
			return ""
		}
		old, _ = lfOnly(strings.TrimPrefix(string(data), utf8BOM))
	}
	var spans []editSpan
	if call.Name == ToolEdit {
		var problem string
		if spans, problem = locateEdits(old, edits); problem != "" {
			return ""
		}
		updated = applySpans(old, spans)
	} else {
		spans = []editSpan{{index: 1, start: 0, end: len(old), newText: updated}}
	}
	if updated == old {
		return ""
	}
	return unifiedDiff(strings.TrimPrefix(filepath.ToSlash(filepath.Clean(path)), "/"), old, updated, spans)
}
