package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The built-in tools by name, and their arguments as each tool reads
// them. A tool reads its call with its Parse function; hooks, validators,
// the TUI and the audit log read it with the same function, so that what
// they check or show is what runs.

// The built-in tools' names, as the model calls them.
const (
	ToolRead  = "read"
	ToolWrite = "write"
	ToolEdit  = "edit"
	ToolBash  = "bash"
	ToolSkill = "skill"
	ToolGrep  = "grep"
	ToolFind  = "find"
	ToolLs    = "ls"
	// ToolPresentPlan ends plan mode: the model's plan, for the user to
	// approve (tools_plan.go).
	ToolPresentPlan = "present_plan"
)

// BuiltinToolNames lists the built-in tools, which no extension or MCP
// server may take the name of.
var BuiltinToolNames = []string{ToolRead, ToolWrite, ToolEdit, ToolBash, ToolSkill, ToolGrep, ToolFind, ToolLs, ToolPresentPlan}

// ReadArgs are the read tool's arguments.
type ReadArgs struct {
	Path   string
	Offset int // the 1-based first line; 0: from the start
	Limit  int // lines; 0: the tool's maximum
}

// ParseReadArgs reads a read call's arguments, or says what is wrong with
// them in words the model can act on.
func ParseReadArgs(raw json.RawMessage) (ReadArgs, error) {
	a := parseToolArgs(ToolRead, raw)
	a.require("path")
	r := ReadArgs{Path: a.str("path")}
	r.Offset, _ = a.integer("offset")
	r.Limit, _ = a.integer("limit")
	switch {
	case a.err != nil:
		return r, a.err
	case r.Path == "":
		return r, errors.New(`invalid arguments for read: "path" must not be empty`)
	case r.Offset < 0:
		return r, fmt.Errorf(`invalid arguments for read: "offset" is a 1-based line number, got %d`, r.Offset)
	case r.Limit < 0:
		return r, fmt.Errorf(`invalid arguments for read: "limit" must be positive, got %d`, r.Limit)
	}
	return r, nil
}

// WriteArgs are the write tool's arguments.
type WriteArgs struct {
	Path    string
	Content string
}

func ParseWriteArgs(raw json.RawMessage) (WriteArgs, error) {
	a := parseToolArgs(ToolWrite, raw)
	a.require("path")
	w := WriteArgs{Path: a.str("path")}
	a.require("content")
	w.Content = a.str("content")
	switch {
	case a.err != nil:
		return w, a.err
	case w.Path == "":
		return w, errors.New(`invalid arguments for write: "path" must not be empty`)
	}
	return w, nil
}

// EditArgs are the edit tool's arguments: every edit applies, or none.
type EditArgs struct {
	Path  string
	Edits []TextEdit
}

// TextEdit replaces OldText, which must occur once, with NewText.
type TextEdit struct {
	OldText string
	NewText string
}

// ParseEditArgs reads an edit call's arguments: {path, edits: [{oldText,
// newText}, …]}, or the one-edit shape {path, oldText, newText} some
// models use from memory of older tools.
func ParseEditArgs(raw json.RawMessage) (EditArgs, error) {
	a := parseToolArgs(ToolEdit, raw)
	a.require("path")
	e := EditArgs{Path: a.str("path")}
	if _, _, ok := a.field("edits"); !ok && a.fields["oldText"] != nil {
		a.require("newText")
		e.Edits = append(e.Edits, TextEdit{a.str("oldText"), a.str("newText")})
	} else {
		a.require("edits")
		for _, item := range a.objects("edits") {
			item.require("oldText")
			item.require("newText")
			e.Edits = append(e.Edits, TextEdit{item.str("oldText"), item.str("newText")})
			if a.err == nil {
				a.err = item.err
			}
		}
	}
	switch {
	case a.err != nil:
		return e, a.err
	case e.Path == "":
		return e, errors.New(`invalid arguments for edit: "path" must not be empty`)
	case len(e.Edits) == 0:
		return e, errors.New(`invalid arguments for edit: "edits" is empty; give at least one {oldText, newText}`)
	}
	return e, nil
}

// BashArgs are the bash tool's arguments.
type BashArgs struct {
	Command string
	Timeout float64 // seconds; 0: the tool's default
}

func ParseBashArgs(raw json.RawMessage) (BashArgs, error) {
	a := parseToolArgs(ToolBash, raw)
	a.require("command")
	b := BashArgs{Command: a.str("command")}
	secs, hasTimeout := a.number("timeout")
	switch {
	case a.err != nil:
		return b, a.err
	case strings.TrimSpace(b.Command) == "":
		return b, errors.New(`invalid arguments for bash: "command" must not be empty`)
	case hasTimeout && secs <= 0:
		return b, fmt.Errorf(`invalid arguments for bash: "timeout" must be a positive number of seconds, got %v`, secs)
	}
	b.Timeout = secs
	return b, nil
}

// SkillArgs are the skill tool's arguments.
type SkillArgs struct {
	Name string
}

func ParseSkillArgs(raw json.RawMessage) (SkillArgs, error) {
	a := parseToolArgs(ToolSkill, raw)
	a.require("name")
	s := SkillArgs{Name: strings.TrimSpace(a.str("name"))}
	return s, a.err
}

// ParsePlanArgs reads present_plan's one argument, the plan.
func ParsePlanArgs(raw json.RawMessage) (string, error) {
	a := parseToolArgs(ToolPresentPlan, raw)
	a.require("plan")
	plan := a.str("plan")
	if a.err == nil && strings.TrimSpace(plan) == "" {
		return "", errors.New(`invalid arguments for present_plan: "plan" must not be empty`)
	}
	return plan, a.err
}

// GrepArgs are the grep tool's arguments.
type GrepArgs struct {
	Pattern    string // an RE2 regular expression
	Path       string // a file or a directory; "" is the working directory
	Glob       string // which files, by name or path (searchGlob); "" is every file
	IgnoreCase bool
}

func ParseGrepArgs(raw json.RawMessage) (GrepArgs, error) {
	a := parseToolArgs(ToolGrep, raw)
	a.require("pattern")
	g := GrepArgs{Pattern: a.str("pattern"), Path: a.str("path"), Glob: a.str("glob"), IgnoreCase: a.boolean("ignore_case")}
	switch {
	case a.err != nil:
		return g, a.err
	case g.Pattern == "":
		return g, errors.New(`invalid arguments for grep: "pattern" must not be empty`)
	}
	return g, nil
}

// FindArgs are the find tool's arguments.
type FindArgs struct {
	Pattern string // a glob (searchGlob)
	Path    string // the directory to look in; "" is the working directory
}

func ParseFindArgs(raw json.RawMessage) (FindArgs, error) {
	a := parseToolArgs(ToolFind, raw)
	a.require("pattern")
	f := FindArgs{Pattern: a.str("pattern"), Path: a.str("path")}
	switch {
	case a.err != nil:
		return f, a.err
	case strings.TrimSpace(f.Pattern) == "":
		return f, errors.New(`invalid arguments for find: "pattern" must not be empty (use "*" for every name)`)
	}
	return f, nil
}

// LsArgs are the ls tool's arguments.
type LsArgs struct {
	Path string // "" is the working directory
}

func ParseLsArgs(raw json.RawMessage) (LsArgs, error) {
	a := parseToolArgs(ToolLs, raw)
	l := LsArgs{Path: a.str("path")}
	return l, a.err
}

// searchRoot is the path a grep, find or ls call searches, as its tool
// reads it ("." when it names none); ok is false for another tool, or
// for arguments the tool will refuse.
func searchRoot(call ToolCall) (root string, ok bool) {
	var p string
	var err error
	switch call.Name {
	case ToolGrep:
		var a GrepArgs
		a, err = ParseGrepArgs(call.Args)
		p = a.Path
	case ToolFind:
		var a FindArgs
		a, err = ParseFindArgs(call.Args)
		p = a.Path
	case ToolLs:
		var a LsArgs
		a, err = ParseLsArgs(call.Args)
		p = a.Path
	default:
		return "", false
	}
	if err != nil {
		return "", false
	}
	if p == "" {
		p = "."
	}
	return p, true
}

// builtinPath is the path a read, write or edit call names, as its tool
// reads it, also when the call's other arguments are wrong; "" when it
// names none.
func builtinPath(call ToolCall) string {
	switch call.Name {
	case ToolRead:
		a, _ := ParseReadArgs(call.Args)
		return a.Path
	case ToolWrite:
		a, _ := ParseWriteArgs(call.Args)
		return a.Path
	case ToolEdit:
		a, _ := ParseEditArgs(call.Args)
		return a.Path
	}
	return ""
}

// toolArgs reads a tool call's JSON object field by field, so a wrong type
// is reported by field name, which the model can act on, instead of as a
// json error about Go types. The first problem wins; later reads are no-ops.
type toolArgs struct {
	tool   string
	prefix string // "edits[2]." inside an array element
	fields map[string]json.RawMessage
	err    error
}

func parseToolArgs(tool string, raw json.RawMessage) *toolArgs {
	a := &toolArgs{tool: tool}
	if err := json.Unmarshal(raw, &a.fields); err != nil || a.fields == nil {
		a.err = fmt.Errorf("invalid arguments for %s: want a JSON object with the fields of the tool's schema", tool)
	}
	return a
}

func (a *toolArgs) fail(format string, args ...any) {
	if a.err == nil {
		a.err = fmt.Errorf("invalid arguments for %s: %s", a.tool, fmt.Sprintf(format, args...))
	}
}

// field returns a present, non-null field and its name as the model sees it.
func (a *toolArgs) field(name string) (json.RawMessage, string, bool) {
	v, ok := a.fields[name]
	if a.err != nil || !ok || string(v) == "null" {
		return nil, "", false
	}
	return v, strconv.Quote(a.prefix + name), true
}

func (a *toolArgs) require(name string) {
	if _, _, ok := a.field(name); !ok && a.err == nil {
		a.fail("%q is required", a.prefix+name)
	}
}

func (a *toolArgs) str(name string) string {
	v, label, ok := a.field(name)
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		a.fail("%s must be a string", label)
	}
	return s
}

// number accepts a JSON number or a string holding one: models quote
// numbers often enough that refusing "30" would only cost a round trip.
func (a *toolArgs) number(name string) (float64, bool) {
	v, label, ok := a.field(name)
	if !ok {
		return 0, false
	}
	var f float64
	if json.Unmarshal(v, &f) == nil {
		return f, true
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			return f, true
		}
	}
	a.fail("%s must be a number", label)
	return 0, false
}

// boolean accepts true and false, or a string holding one.
func (a *toolArgs) boolean(name string) bool {
	v, label, ok := a.field(name)
	if !ok {
		return false
	}
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return b
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		if b, err := strconv.ParseBool(strings.TrimSpace(s)); err == nil {
			return b
		}
	}
	a.fail("%s must be true or false", label)
	return false
}

func (a *toolArgs) integer(name string) (int, bool) {
	f, ok := a.number(name)
	if !ok {
		return 0, false
	}
	if f != float64(int64(f)) || f < -1e15 || f > 1e15 {
		a.fail("%q must be a whole number", a.prefix+name)
		return 0, false
	}
	return int(f), true
}

// objects reads an array of objects, each to be read with its own toolArgs.
func (a *toolArgs) objects(name string) []*toolArgs {
	v, label, ok := a.field(name)
	if !ok {
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(v, &items) != nil {
		a.fail("%s must be an array of objects", label)
		return nil
	}
	out := make([]*toolArgs, len(items))
	for i, item := range items {
		sub := &toolArgs{tool: a.tool, prefix: fmt.Sprintf("%s%s[%d].", a.prefix, name, i+1)}
		if json.Unmarshal(item, &sub.fields) != nil || sub.fields == nil {
			a.fail("%q must be an object", fmt.Sprintf("%s%s[%d]", a.prefix, name, i+1))
			return nil
		}
		out[i] = sub
	}
	return out
}
