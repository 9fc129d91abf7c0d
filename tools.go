package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

// Tool is something the model can call. Run must honour ctx: when it is
// cancelled the tool stops, cleans up whatever it started and returns.
// Bad arguments are the model's mistake, not a failure of the program:
// Run reports them as an error result and never panics.
type Tool interface {
	Name() string
	Description() string
	Schema() json.RawMessage
	Run(ctx context.Context, args json.RawMessage, progress func(line string)) ToolResult
}

// ReadOnlyTool is a tool that says whether it changes nothing — read,
// grep, find, ls, an MCP tool its server marks readOnlyHint — and so may
// run in plan mode. A tool without the method is taken to change things.
type ReadOnlyTool interface {
	Tool
	ReadOnly() bool
}

// IsReadOnly says whether t says it changes nothing.
func IsReadOnly(t Tool) bool {
	r, ok := t.(ReadOnlyTool)
	return ok && r.ReadOnly()
}

// ToolResult is what a tool gives back to the model. Details is shown to the
// user and recorded but never sent to the model (e.g. which extension ran it).
type ToolResult struct {
	Content  []Block
	IsError  bool
	Details  string
	ExitCode *int
	// Confined, set by bash, says that the sandbox refused what the
	// command tried (a write outside the writable set, the network
	// offline) and why: a run outside the sandbox might do it. The agent
	// may offer that run (Agent.OfferOutside).
	Confined string
}

// ToolSpec is a tool as a provider describes it to the model. Source is
// where it came from (the registry's source: "builtin", "skill", "ext",
// "mcp:NAME"), which is not sent.
type ToolSpec struct {
	Name        string
	Description string
	Schema      json.RawMessage
	Source      string
}

func errorResult(format string, args ...any) ToolResult {
	return ToolResult{Content: []Block{TextBlock(fmt.Sprintf(format, args...))}, IsError: true}
}

func textResult(text string) ToolResult {
	return ToolResult{Content: []Block{TextBlock(text)}}
}

// ToolRegistry holds the tools the model may call, grouped by where they came
// from ("builtin", "ext", "mcp:fs"…). A source registered earlier wins a name
// conflict with one registered later, so built-ins always win. It is safe for
// concurrent use: extensions reload and MCP servers arrive while a turn runs.
type ToolRegistry struct {
	mu      sync.RWMutex
	sources []toolSource
	allow   func(name string) bool
}

type toolSource struct {
	name  string
	tools []Tool
}

func NewToolRegistry() *ToolRegistry { return &ToolRegistry{} }

// SetSource adds a source of tools, or replaces the tools of one already
// present (keeping its precedence). It returns the names of this source's
// tools that an earlier source shadows.
func (r *ToolRegistry) SetSource(source string, tools []Tool) (shadowed []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	taken := map[string]bool{}
	replaced := false
	for i := range r.sources {
		if r.sources[i].name == source {
			r.sources[i].tools = tools
			replaced = true
			break
		}
		for _, t := range r.sources[i].tools {
			taken[t.Name()] = true
		}
	}
	if !replaced {
		r.sources = append(r.sources, toolSource{name: source, tools: tools})
	}
	for _, t := range tools {
		if taken[t.Name()] {
			shadowed = append(shadowed, t.Name())
		}
	}
	return shadowed
}

// SetFilter limits which tools the model sees; nil allows all.
func (r *ToolRegistry) SetFilter(allow func(name string) bool) {
	r.mu.Lock()
	r.allow = allow
	r.mu.Unlock()
}

// Lookup finds the tool the model would reach by this name.
func (r *ToolRegistry) Lookup(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.allow != nil && !r.allow(name) {
		return nil, false
	}
	for _, s := range r.sources {
		for _, t := range s.tools {
			if t.Name() == name {
				return t, true
			}
		}
	}
	return nil, false
}

// List returns the visible tools sorted by name: a stable order keeps the
// provider's prompt cache warm.
func (r *ToolRegistry) List() []Tool {
	var out []Tool
	for _, st := range r.visible() {
		out = append(out, st.tool)
	}
	return out
}

type sourcedTool struct {
	tool   Tool
	source string
}

// visible are the tools the model sees, with their sources, sorted by
// name.
func (r *ToolRegistry) visible() []sourcedTool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	seen := map[string]bool{}
	var out []sourcedTool
	for _, s := range r.sources {
		for _, t := range s.tools {
			n := t.Name()
			if seen[n] || (r.allow != nil && !r.allow(n)) {
				continue
			}
			seen[n] = true
			out = append(out, sourcedTool{t, s.name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].tool.Name() < out[j].tool.Name() })
	return out
}

// Names are the names of every tool registered, whether the filter lets
// the model see it or not.
func (r *ToolRegistry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var names []string
	for _, s := range r.sources {
		for _, t := range s.tools {
			if !slices.Contains(names, t.Name()) {
				names = append(names, t.Name())
			}
		}
	}
	sort.Strings(names)
	return names
}

// Specs describes the visible tools for a provider request.
func (r *ToolRegistry) Specs() []ToolSpec {
	var specs []ToolSpec
	for _, st := range r.visible() {
		t := st.tool
		specs = append(specs, ToolSpec{Name: t.Name(), Description: t.Description(), Schema: t.Schema(), Source: st.source})
	}
	return specs
}

// toolFilter builds the --tools allow-list: exact names or path.Match globs
// such as "mcp__fs__*".
func toolFilter(patterns []string) func(string) bool {
	return func(name string) bool {
		for _, p := range patterns {
			if ok, _ := path.Match(p, name); ok || p == name {
				return true
			}
		}
		return false
	}
}

// Limits of the built-in tools. They keep one tool result within what a
// model can use and the process within fixed memory, whatever the input.
const (
	readMaxLines  = 2000
	readMaxBytes  = 50 << 10
	readMaxImage  = 5 << 20
	sniffBytes    = 8 << 10 // read looks this far for a NUL byte or image magic
	editMaxBytes  = 64 << 20
	bashTimeout   = 120 * time.Second
	bashMaxTime   = 600 * time.Second
	bashDrain     = 200 * time.Millisecond
	progressEvery = 100 * time.Millisecond
)

// A command's output in the bash result: a quarter from its head, the
// rest from its tail, where test summaries and errors are. The spill file
// keeps the whole output up to bashSpillDefault, then a quarter from the
// head and the rest from the tail: a command printing forever must not
// fill the disk.
const (
	bashOutputDefault = 16 << 10
	bashOutputMax     = 1 << 20
	bashSpillDefault  = 64 << 20
)

// ToolEnv is the state the built-in tools share: the session's working
// directory, against which relative paths resolve, and whether the jail is
// on. The TUI flips the jail with /jail and /unjail while tools may run,
// so the flag is atomic; Cwd does not change after NewToolEnv.
//
// The jail keeps read, write and edit inside Cwd, after every symlink:
// the tools open what the jail judged (tools_open.go), so a symlink
// swapped in between does not lead them out. bash is not jailed at all,
// since a shell can reach any path anyway.
//
// The bash tool's spill files (the full output of a long command, which
// the model may read later in the session) belong to the ToolEnv: Close
// removes them, and closes the sandbox.
type ToolEnv struct {
	Cwd  string
	jail atomic.Bool
	// Sandbox, when not nil, confines bash commands and what read, write
	// and edit reach. It is set before the tools first run.
	Sandbox CommandSandbox
	// JailHint ends the jail's refusal with what its reader can do about
	// it, in the terms of the mode: the TUI's /unjail, the command line's
	// --jail. Set it before the tools run.
	JailHint string

	// BashOutput is the most of a command's output the bash result
	// holds (0: bashOutputDefault, at most bashOutputMax), and
	// SpillLimit the most its spill file keeps whole (0:
	// bashSpillDefault; below 0: no spill file). Set them before the
	// tools run.
	BashOutput int
	SpillLimit int64

	// Editor, when set, holds the text of files for read, write and edit
	// (zot acp: the editor's buffers). Set it before the tools run.
	Editor *EditorFiles

	// ReadRule, when set, is what the permission rules say of reading a
	// path a search tool (grep, find, ls) meets beneath where it started:
	// named as the model would reach it, and real, symlinks resolved.
	// What is not PathAllowed is neither listed nor read. Private are
	// directories the search tools never enter, sandbox or not
	// ($ZOT_HOME). Set both before the tools run.
	ReadRule func(named, real string) PathVerdict
	Private  []string

	spillMu sync.Mutex
	spills  []keptSpill
}

// EditorFiles is a host that holds the text of files itself — an editor
// with unsaved buffers — for read, write and edit to read and write
// through, once their own checks (the jail, the sandbox) have passed on
// the path, which is absolute, symlinks resolved. A nil Read or Write
// leaves that side on the disk. How the host stores what it is given
// (atomically, keeping the file's mode) is the host's.
type EditorFiles struct {
	Read  func(ctx context.Context, path string) (string, error)
	Write func(ctx context.Context, path, text string) error
}

// editorRead and editorWrite are the editor's sides, nil when the files
// are on the disk.
func (e *ToolEnv) editorRead() func(context.Context, string) (string, error) {
	if e.Editor == nil {
		return nil
	}
	return e.Editor.Read
}

func (e *ToolEnv) editorWrite() func(context.Context, string, string) error {
	if e.Editor == nil {
		return nil
	}
	return e.Editor.Write
}

// CommandSandbox confines the model's commands and file tools
// (sandbox*.go). The paths its checks get are absolute, symlinks resolved.
type CommandSandbox interface {
	// Start starts spec's program inside the sandbox, as startProc does.
	Start(spec procSpec) (*proc, error)
	// Close stops what the sandbox keeps ready for the next command.
	Close() error
	// CheckRead and CheckWrite refuse a path the sandbox keeps from
	// commands, saying which setting would allow it.
	CheckRead(real string) error
	CheckWrite(real string) error
	// Hidden are the directories nothing may reach ($ZOT_HOME): the file
	// tools never enter them, by whatever name (tools_open.go).
	Hidden() []string
	// Explain returns a note on a failed command's output when it shows
	// the sandbox refused something, else ""; outside says that a run
	// outside the sandbox might do what was refused (a write outside the
	// writable set, the network), which it never says of $ZOT_HOME.
	Explain(output string) (note string, outside bool)
	// After checks, once nothing of the command started as p runs any
	// more, what it changed that programs outside the sandbox read or run
	// (git, validators, rule files), puts that back, and returns a note
	// saying so, else "".
	After(p *proc) string
}

// Confinement is the sandbox a gate chose for one call, over the
// ToolEnv's own (GateResult.Confine): the mode's read-only sandbox in plan
// mode, the workspace sandbox in sandboxed-auto, none at all for a
// command the user let run outside once. Name is what the audit log and
// messages call it ("read-only", "off").
type Confinement struct {
	Sandbox CommandSandbox // nil: not confined
	Name    string
	// Fixed: no run outside it is offered (plan mode's read-only
	// sandbox is the mode's promise).
	Fixed bool
}

type (
	confinementKey struct{}
	toolCallKey    struct{}
)

// ToolCallID is the id of the call a tool runs for, "" outside one: a
// tool that asks someone (present_plan) names the call it asks about.
func ToolCallID(ctx context.Context) string {
	id, _ := ctx.Value(toolCallKey{}).(string)
	return id
}

// WithConfinement makes the tools run under c: what the agent does with
// a decision's Confine.
func WithConfinement(ctx context.Context, c *Confinement) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, confinementKey{}, c)
}

// sandbox is the sandbox a call runs in: the one its decision chose, else
// the ToolEnv's.
func (e *ToolEnv) sandbox(ctx context.Context) CommandSandbox {
	if c, ok := ctx.Value(confinementKey{}).(*Confinement); ok {
		return c.Sandbox
	}
	return e.Sandbox
}

// NewToolEnv makes cwd absolute so a later chdir of the process cannot
// change what a relative path means.
func NewToolEnv(cwd string, jail bool) *ToolEnv {
	if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}
	e := &ToolEnv{Cwd: cwd}
	e.jail.Store(jail)
	return e
}

func (e *ToolEnv) SetJail(on bool) { e.jail.Store(on) }

func (e *ToolEnv) Jailed() bool { return e.jail.Load() }

// keptSpill is a spill file of e's, with the file it was when made.
type keptSpill struct {
	path string
	info fs.FileInfo
}

func (e *ToolEnv) keepSpill(path string) {
	info, err := os.Lstat(path)
	if err != nil {
		return
	}
	e.spillMu.Lock()
	defer e.spillMu.Unlock()
	e.spills = append(e.spills, keptSpill{path, info})
}

// isSpill says whether info is one of e's spill files: the very file made,
// not whatever now has its name — the model's commands can replace a file
// in the temporary directory with a link to one the jail keeps out.
func (e *ToolEnv) isSpill(info fs.FileInfo) bool {
	e.spillMu.Lock()
	defer e.spillMu.Unlock()
	for _, s := range e.spills {
		if os.SameFile(s.info, info) {
			return true
		}
	}
	return false
}

// Close removes the spill files of the bash calls made with e. Call it
// when the session's process is done with its tools.
func (e *ToolEnv) Close() error {
	e.spillMu.Lock()
	defer e.spillMu.Unlock()
	var errs []error
	for _, sp := range e.spills {
		if err := os.Remove(sp.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	e.spills = nil
	if e.Sandbox != nil {
		errs = append(errs, e.Sandbox.Close())
	}
	return errors.Join(errs...)
}

// spillPattern names the bash tool's spill files in os.TempDir().
const spillPattern = "zot-bash-*.log"

// sweepStaleSpills runs RemoveStaleSpills on tmp for files a day old, at
// most once an hour per $ZOT_HOME (the stamp file's time says when it last
// did): listing a busy temp directory at every start would make starting
// cost grow with the machine, not with the work.
func sweepStaleSpills(home, tmp string) {
	stamp := filepath.Join(home, "spills-swept")
	if fi, err := os.Stat(stamp); err == nil && time.Since(fi.ModTime()) < time.Hour {
		return
	}
	os.WriteFile(stamp, nil, 0o600) // a home not there yet sweeps next time too
	RemoveStaleSpills(tmp, 24*time.Hour)
}

// RemoveStaleSpills deletes, in dir, the spill files older than age that
// a zot which did not get to Close (killed, crashed) left behind: only
// names of spillPattern's form, only regular files, only the user's own.
func RemoveStaleSpills(dir string, age time.Duration) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix, suffix, _ := strings.Cut(spillPattern, "*")
	for _, e := range entries {
		name := e.Name()
		middle, hasPrefix := strings.CutPrefix(name, prefix)
		middle, hasSuffix := strings.CutSuffix(middle, suffix)
		if !hasPrefix || !hasSuffix || middle == "" || strings.Trim(middle, "0123456789") != "" {
			continue
		}
		path := filepath.Join(dir, name)
		st, err := os.Lstat(path)
		if err != nil || !st.Mode().IsRegular() || time.Since(st.ModTime()) < age {
			continue
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Getuid() {
			continue
		}
		os.Remove(path)
	}
}

// BuiltinTools returns read, write, edit and bash, in that order.
func BuiltinTools(env *ToolEnv) []Tool {
	return []Tool{readTool{env}, writeTool{env}, editTool{env}, bashTool{env}}
}

// SearchTools returns grep, find and ls, in that order.
func SearchTools(env *ToolEnv) []Tool {
	return []Tool{grepTool{env}, findTool{env}, lsTool{env}}
}

// followPath resolves the symlinks of the deepest part of abs that exists
// and keeps the rest, which a write is about to create, as it is. It is
// for messages (the sandbox's notes): the tools open paths through
// tools_open.go, which checks what it opens.
func followPath(abs string) (string, error) {
	for hops := 0; hops < 40; hops++ {
		dir, rest := abs, ""
		for {
			_, err := os.Lstat(dir)
			if err == nil {
				break
			}
			// ENOTDIR: a parent is a file; the write that follows says so.
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
				return "", err
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			rest = filepath.Join(filepath.Base(dir), rest)
			dir = parent
		}
		real, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		// dir exists but does not resolve: it is a dangling link.
		target, err := os.Readlink(dir)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(dir), target)
		}
		abs = filepath.Join(target, rest)
	}
	return "", errors.New("too many levels of symbolic links")
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

type readTool struct{ env *ToolEnv }

func (readTool) Name() string { return ToolRead }

func (readTool) ReadOnly() bool { return true }

// The descriptions and schemas of the tools go with every request: they
// say what the model must know to call a tool right, and no more
// (docs/usage.md#fewer-tokens).

func (readTool) Description() string {
	return "Read a file or image: at most 2000 lines or 50 KiB, and the result gives the offset that continues."
}

func (readTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},` +
		`"offset":{"type":"integer"},"limit":{"type":"integer"}},"required":["path"]}`)
}

func (t readTool) Run(ctx context.Context, raw json.RawMessage, _ func(string)) ToolResult {
	args, err := ParseReadArgs(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	p, offset, limit := args.Path, args.Offset, args.Limit
	// 0 is what models send for "not set".
	offset = max(offset, 1)
	if limit == 0 || limit > readMaxLines {
		limit = readMaxLines
	}
	// openRead opens only a regular file: a FIFO or a device could block
	// or never end.
	f, info, err := t.env.openRead(ctx, p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errorResult("read %s: no such file (relative paths start at %s)", p, t.env.Cwd)
	case err != nil:
		return errorResult("%v", err)
	case info.IsDir():
		return errorResult("read %s: it is a directory; list it with bash (e.g. ls -la %s)", p, p)
	case f == nil:
		return errorResult("read %s: not a regular file (a device, pipe or socket); inspect it with bash", p)
	}
	defer f.Close()

	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return errorResult("read %s: %v", p, err)
	}
	head = head[:n]
	if mime := imageType(head); mime != "" {
		return readImage(f, p, mime, info.Size())
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return errorResult("read %s: it looks binary (a NUL byte in its first 8 KiB), so it cannot be shown as text; inspect it with bash (e.g. file %s, or xxd %s | head)", p, p, p)
	}
	if read := t.env.editorRead(); read != nil {
		real, err := followPath(absPath(t.env.Cwd, p))
		if err != nil {
			return errorResult("read %s: %v", p, err)
		}
		text, err := read(ctx, real)
		switch {
		case err != nil:
			return errorResult("read %s: the editor could not give its text: %v", p, err)
		case text == "":
			return textResult(fmt.Sprintf("(%s is empty)", p))
		}
		return readLines(ctx, bufio.NewReaderSize(strings.NewReader(text), 64<<10), p, int64(len(text)), offset, limit)
	}
	if info.Size() == 0 {
		return textResult(fmt.Sprintf("(%s is empty)", p))
	}
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(head), f), 64<<10)
	return readLines(ctx, br, p, info.Size(), offset, limit)
}

func imageType(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

func readImage(f *os.File, p, mime string, size int64) ToolResult {
	if size > readMaxImage {
		return errorResult("read %s: the image is %s, above the %s limit for images; make a smaller copy with bash (e.g. ImageMagick: convert %s -resize 50%% /tmp/small.png) and read that", p, sizeString(size), sizeString(readMaxImage), p)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return errorResult("read %s: %v", p, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, readMaxImage+1))
	if err != nil {
		return errorResult("read %s: %v", p, err)
	}
	if len(data) > readMaxImage {
		return errorResult("read %s: the image grew above the %s limit while being read", p, sizeString(readMaxImage))
	}
	return ToolResult{Content: []Block{
		TextBlock(fmt.Sprintf("Image %s (%s, %s)", p, mime, sizeString(int64(len(data))))),
		{Type: BlockImage, MimeType: mime, Data: base64.StdEncoding.EncodeToString(data)},
	}}
}

// readLines streams to line offset and returns up to limit lines within
// readMaxBytes. Memory stays bounded by the reader's buffer and the byte
// budget, whatever the size of the file or the length of its lines.
func readLines(ctx context.Context, br *bufio.Reader, p string, size int64, offset, limit int) ToolResult {
	pastEnd := func(lines int) ToolResult {
		return errorResult("read %s: offset %d is past the end of the file (it has %d lines)", p, offset, lines)
	}
	var consumed int64
	for line := 1; line < offset; line++ {
		_, n, err := readLine(ctx, br, 0, nil)
		consumed += n
		switch {
		case err == io.EOF && n > 0:
			return pastEnd(line)
		case err == io.EOF:
			return pastEnd(line - 1)
		case err != nil:
			return errorResult("read %s: %v", p, err)
		case line%(1<<16) == 0 && ctx.Err() != nil:
			return errorResult("read %s: %v", p, ctx.Err())
		}
	}

	var out bytes.Buffer
	var text []byte
	shown, held, eof := 0, false, false // held: a line was read but left for the next call
	for shown < limit && !eof {
		var n int64
		var err error
		text, n, err = readLine(ctx, br, readMaxBytes+1, text[:0])
		consumed += n
		if eof = err == io.EOF; err != nil && !eof {
			return errorResult("read %s: %v", p, err)
		}
		if n == 0 {
			break
		}
		text = bytes.TrimSuffix(bytes.TrimSuffix(text, []byte("\n")), []byte("\r"))
		if out.Len()+len(text)+1 <= readMaxBytes {
			out.Write(text)
			out.WriteByte('\n')
			shown++
			continue
		}
		if shown > 0 {
			held = true // the next call starts with it rather than cut it
			break
		}
		keep := utf8Prefix(text, readMaxBytes-256)
		out.Write(keep)
		fmt.Fprintf(&out, "\n[line %d is %s long; showed its first %d bytes. See the rest with bash, e.g. sed -n %dp %s | cut -b %d-]\n",
			offset, sizeString(n), len(keep), offset, p, len(keep)+1)
		shown++
		break
	}
	if shown == 0 {
		return pastEnd(offset - 1)
	}
	if !held {
		if _, err := br.Peek(1); eof || err == io.EOF {
			return textResult(out.String())
		}
	}
	next := offset + shown
	total := fmt.Sprintf("more (%s unread)", sizeString(size-consumed))
	// Counting what is left is cheap for a small rest and tells the model
	// how far it has to go; a huge rest stays unread.
	if size-consumed <= 4<<20 {
		lines, err := next-1, error(nil)
		if held {
			lines++
		}
		for err == nil {
			var n int64
			if _, n, err = readLine(ctx, br, 0, nil); n > 0 {
				lines++
			}
		}
		if total = "more"; err == io.EOF {
			total = strconv.Itoa(lines)
		}
	}
	why := ""
	if held {
		why = ", 50 KiB per call"
	}
	fmt.Fprintf(&out, "[lines %d-%d of %s%s; continue with offset=%d]", offset, next-1, total, why, next)
	return textResult(out.String())
}

// readLine reads one line, keeping at most keep bytes of it in buf. n is
// the line's full length including its newline; err is io.EOF for a last
// line without one (n == 0 at the end of the file).
func readLine(ctx context.Context, br *bufio.Reader, keep int, buf []byte) (line []byte, n int64, err error) {
	for chunks := 1; ; chunks++ {
		chunk, err := br.ReadSlice('\n')
		n += int64(len(chunk))
		if room := keep - len(buf); room > 0 {
			buf = append(buf, chunk[:min(room, len(chunk))]...)
		}
		if err != bufio.ErrBufferFull {
			return buf, n, err
		}
		if chunks%(1<<14) == 0 && ctx.Err() != nil {
			return buf, n, ctx.Err()
		}
	}
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

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

// replacement is the owner and mode a file replacing old keeps, or why
// old must not be replaced (replaceFileAt).
func replacement(old fs.FileInfo) (*fileOwner, fs.FileMode, error) {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok { // the owner is unknown, so it cannot be kept
		return nil, keptMode(old) &^ (fs.ModeSetuid | fs.ModeSetgid), nil
	}
	if links := uint64(st.Nlink); links > 1 {
		return nil, 0, fmt.Errorf("it has %d hard links, and replacing it would give only this name the new text; "+
			"to change every name, write in place with bash (cat > FILE); to change only this one, copy it first "+
			"with bash (cp -p FILE FILE.new && mv FILE.new FILE) and retry", links)
	}
	return &fileOwner{uid: int(st.Uid), gid: int(st.Gid)}, keptMode(old), nil
}

// keptMode is the part of a file's mode that a replacement keeps.
func keptMode(info fs.FileInfo) fs.FileMode {
	return info.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// fileOwner is the owner and group a replacement file should keep.
type fileOwner struct{ uid, gid int }

// keepOwner gives f the owner and group of want where the writer may,
// and returns mode without the set-id bits whose owner or group was not
// kept. It runs before the mode is set: chown clears set-id bits.
func keepOwner(f *os.File, mode fs.FileMode, want fileOwner) (fs.FileMode, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return mode &^ (fs.ModeSetuid | fs.ModeSetgid), nil
	}
	uid, gid := int(st.Uid), int(st.Gid)
	if uid != want.uid || gid != want.gid {
		// EPERM is expected for anyone but root: the next best is the group.
		if f.Chown(want.uid, want.gid) == nil {
			uid, gid = want.uid, want.gid
		} else if gid != want.gid && f.Chown(-1, want.gid) == nil {
			gid = want.gid
		}
	}
	if uid != want.uid {
		mode &^= fs.ModeSetuid
	}
	if gid != want.gid {
		mode &^= fs.ModeSetgid
	}
	return mode, nil
}

// bashTool runs a command line with bashToolShell. It is not jailed: a
// shell can reach any path, so the jail would only pretend; command
// validators and hooks are where shell commands are vetted.
type bashTool struct{ env *ToolEnv }

func (bashTool) Name() string { return ToolBash }

func (bashTool) Description() string {
	return "Run a command with " + bashToolShell().Path + " -c in the working directory. " +
		"Long output keeps its start and end; all of it is in a file the result names. " +
		"Background jobs end with it unless started with setsid."
}

func (bashTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},` +
		`"timeout":{"type":"number","description":"seconds (120; at most 600)"}},"required":["command"]}`)
}

func (t bashTool) Run(ctx context.Context, raw json.RawMessage, progress func(string)) ToolResult {
	args, err := ParseBashArgs(raw)
	switch {
	case err != nil:
		return errorResult("%v", err)
	case ctx.Err() != nil:
		return errorResult("bash: aborted before the command started")
	}
	command, secs := args.Command, args.Timeout
	timeout, note := bashTimeout, ""
	if secs > 0 {
		if secs > bashMaxTime.Seconds() {
			note = fmt.Sprintf("[timeout %gs is above the maximum; used %gs]", secs, bashMaxTime.Seconds())
			secs = bashMaxTime.Seconds()
		}
		timeout = time.Duration(secs * float64(time.Second))
	}
	res := runShell(ctx, t.env, command, timeout, progress)
	if note != "" {
		res.Content[0].Text += "\n" + note
	}
	return res
}

// commandShell is the shell the bash tool runs command lines with. The
// validators' splitter reads a line by the grammar of this same shell.
type commandShell struct {
	Path string // absolute
	Bash bool   // false: a POSIX sh, read as dash or bash --posix would
}

// bashToolShell finds the shell once, the first time it is needed: bash at
// a well-known path, else the first bash on $PATH, else /bin/sh.
var bashToolShell = sync.OnceValue(func() commandShell {
	for _, p := range []string{"/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash", "/opt/homebrew/bin/bash"} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return commandShell{Path: p, Bash: true}
		}
	}
	if p, err := exec.LookPath("bash"); err == nil && filepath.IsAbs(p) {
		return commandShell{Path: p, Bash: true}
	}
	return commandShell{Path: "/bin/sh"}
})

// shellArgv is the command line that runs a bash tool command.
func shellArgv(command string) []string { return []string{bashToolShell().Path, "-c", command} }

// runShell runs command in a session of its own (startProc), stdout and
// stderr on one pipe so their order is kept. When the shell exits, what its
// background children write within bashDrain is read and the rest of its
// session is stopped; when the timeout passes or ctx is cancelled, the
// whole session is stopped (SIGTERM, SIGKILL after killGrace). Either way
// no process of the session and no goroutine outlives the call. A process
// that started a session of its own (setsid) is beyond the call's reach;
// the read deadline keeps it from holding the call open. A spill file the
// result names is registered with env, which removes it at Close.
func runShell(ctx context.Context, env *ToolEnv, command string, timeout time.Duration, progress func(string)) ToolResult {
	argv := shellArgv(command)
	spec := procSpec{argv: argv, dir: env.Cwd, env: envNoSecrets, stdout: streamPipe, stderr: streamStdout, bigStdout: true}
	start := startProc
	sb := env.sandbox(ctx)
	if sb != nil {
		start = sb.Start
	}
	p, err := start(spec)
	if err != nil {
		return errorResult("bash: start %s in %s: %v", argv[0], env.Cwd, err)
	}
	pr := p.stdout
	out := newShellOutput(env.BashOutput, env.SpillLimit)
	readDone := make(chan struct{})
	// The reader owns out until readDone closes; it stops at EOF or at the
	// read deadline set below once the shell is gone.
	go func() {
		defer close(readDone)
		out.readFrom(pr, progress)
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	stopped := ""
	select {
	case <-p.Exited():
	case <-timer.C:
		stopped = fmt.Sprintf("timed out after %gs", timeout.Seconds())
	case <-ctx.Done():
		stopped = "aborted"
	}
	if stopped != "" {
		p.Stop(killGrace)
		<-p.Exited()
	}
	// The shell is gone, but children it left in the background may hold
	// the pipe open: take what they write within bashDrain, stop them,
	// then take what they wrote before they died.
	pr.SetReadDeadline(time.Now().Add(bashDrain))
	<-readDone
	leftovers := stopped == "" && p.Stop(killGrace) != nothingLeft
	if !out.eof {
		pr.SetReadDeadline(time.Now().Add(bashDrain))
		out.readFrom(pr, progress)
	}
	pr.Close()
	p.Reap()

	cut := out.total > int64(out.headMax+len(out.ring))
	spill := out.close(cut)
	if spill != "" {
		env.keepSpill(spill)
	}
	text, _ := out.result(spill)
	if text == "" {
		text = "(no output)"
	}
	var b strings.Builder
	b.WriteString(text)
	if !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
	code, signal := p.ExitCode()
	switch {
	case stopped != "":
		fmt.Fprintf(&b, "[%s; stopped the command and its process group (exit code %d)]", stopped, code)
	case signal != 0:
		fmt.Fprintf(&b, "[exit code %d: killed by signal %v]", code, signal)
	default:
		fmt.Fprintf(&b, "[exit code %d]", code)
	}
	if leftovers {
		b.WriteString("\n[stopped processes the command left running in the background]")
	}
	confined := ""
	if code != 0 && sb != nil {
		note, outside := sb.Explain(text)
		if note != "" {
			b.WriteString("\n" + note)
		}
		if outside && stopped == "" {
			confined = note
		}
	}
	if sb != nil {
		if note := sb.After(p); note != "" {
			b.WriteString("\n" + note)
		}
	}
	return ToolResult{Content: []Block{TextBlock(b.String())}, IsError: stopped != "" || code != 0, ExitCode: &code, Confined: confined}
}

// shellOutput keeps what a command prints in fixed memory: the head and a
// ring of the tail that the result shows, and, once the output outgrows
// the head, a spill file (spillFile) that the result names when anything
// was cut.
type shellOutput struct {
	head       []byte
	headMax    int
	ring       []byte
	ringPos    int // next byte to write; the oldest byte once the ring is full
	ringLen    int
	total      int64
	lines      int64 // line breaks
	spillLimit int64 // < 0: none
	spill      *spillFile
	spillErr   error
	eof        bool // every writer of the pipe has closed it

	line     []byte // the unfinished last line, for progress
	lastSent time.Time
}

// newShellOutput keeps budget bytes for the result (ToolEnv.BashOutput)
// and spillLimit for the spill file (ToolEnv.SpillLimit).
func newShellOutput(budget int, spillLimit int64) *shellOutput {
	if budget <= 0 {
		budget = bashOutputDefault
	}
	budget = min(budget, bashOutputMax)
	if spillLimit == 0 {
		spillLimit = bashSpillDefault
	}
	headMax := budget / 4
	return &shellOutput{head: make([]byte, 0, headMax), headMax: headMax, ring: make([]byte, budget-headMax), spillLimit: spillLimit}
}

// readFrom reads r to its end. Once there is a spill file, the command's
// output is read straight into the spill file's chunks, which go to its
// writer as they are: a gigabyte of output is not copied once more.
func (o *shellOutput) readFrom(r io.Reader, progress func(string)) {
	own := make([]byte, headRead)
	for {
		buf, chunk := own, o.spill != nil && o.spillErr == nil
		if chunk {
			buf = o.spill.take()
		}
		n, err := r.Read(buf)
		if n > 0 {
			o.write(buf[:n], chunk)
			if progress != nil {
				o.report(buf[:n], progress)
			}
		}
		if chunk {
			o.spill.give(buf[:n])
		}
		if err != nil {
			o.eof = err == io.EOF
			return
		}
	}
}

// write takes p, the output's next bytes; spilled says p is a spill
// file's chunk, which the caller gives to it.
func (o *shellOutput) write(p []byte, spilled bool) {
	o.total += int64(len(p))
	o.lines += int64(bytes.Count(p, []byte{'\n'}))
	if room := o.headMax - len(o.head); room > 0 {
		k := min(room, len(p))
		o.head = append(o.head, p[:k]...)
		p = p[k:]
		if len(p) == 0 {
			return
		}
	}
	if !spilled {
		o.toSpill(p)
	}
	if len(p) >= len(o.ring) {
		copy(o.ring, p[len(p)-len(o.ring):])
		o.ringPos, o.ringLen = 0, len(o.ring)
		return
	}
	k := copy(o.ring[o.ringPos:], p)
	copy(o.ring, p[k:])
	o.ringPos = (o.ringPos + len(p)) % len(o.ring)
	o.ringLen = min(o.ringLen+len(p), len(o.ring))
}

// toSpill is called with what follows the head; the spill file is created
// on first need and starts with the head.
func (o *shellOutput) toSpill(p []byte) {
	if o.spillLimit < 0 || o.spillErr != nil {
		return
	}
	if o.spill == nil {
		if o.spill, o.spillErr = newSpillFile(o.spillLimit); o.spillErr != nil {
			return
		}
		o.spill.write(o.head)
	}
	o.spill.write(p)
}

// report passes the latest complete line to progress, at most every
// progressEvery; lines in between are skipped, not queued.
func (o *shellOutput) report(p []byte, progress func(string)) {
	const maxLine = 512
	last := bytes.LastIndexByte(p, '\n')
	if last < 0 {
		if room := maxLine - len(o.line); room > 0 {
			o.line = append(o.line, p[:min(room, len(p))]...)
		}
		return
	}
	if now := time.Now(); now.Sub(o.lastSent) >= progressEvery {
		var line []byte
		if prev := bytes.LastIndexByte(p[:last], '\n'); prev >= 0 {
			line = p[prev+1 : last]
		} else {
			line = append(o.line, p[:min(last, maxLine)]...)
		}
		line = bytes.TrimRight(utf8Prefix(line, maxLine), "\r")
		if len(bytes.TrimSpace(line)) > 0 {
			o.lastSent = now
			progress(string(line))
		}
	}
	rest := p[last+1:]
	o.line = append(o.line[:0], rest[:min(maxLine, len(rest))]...)
}

// result is the output to show: all of it when it fits, else the head and
// the tail, cut at line breaks where one is near, around a marker naming
// what was left out (bytes, and lines to read the spill file from) and
// where it is. spill is the spill file as close left it.
func (o *shellOutput) result(spill string) (string, int64) {
	tail := o.ring[:o.ringLen]
	if o.ringLen == len(o.ring) {
		tail = append(append(make([]byte, 0, len(o.ring)), o.ring[o.ringPos:]...), o.ring[:o.ringPos]...)
	}
	if int64(len(o.head)+len(tail)) == o.total {
		return string(o.head) + string(tail), 0
	}
	head := utf8Prefix(o.head, len(o.head))
	if i := bytes.LastIndexByte(head, '\n'); i >= len(head)-len(head)/4 {
		head = head[:i+1]
	}
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/4 {
		tail = tail[i+1:]
	} else {
		for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
			tail = tail[1:]
		}
	}
	cut := o.total - int64(len(head)+len(tail))
	lines := o.lines
	if o.total > 0 && len(tail) > 0 && tail[len(tail)-1] != '\n' {
		lines++ // an unfinished last line
	}
	from, to := int64(bytes.Count(head, []byte{'\n'}))+1, lines-int64(bytes.Count(tail, []byte{'\n'}))
	if len(tail) > 0 && tail[len(tail)-1] != '\n' {
		to--
	}
	var where string
	switch {
	case o.spillLimit < 0:
		where = "no spill file (bash_spill_limit is 0)"
	case o.spillErr != nil || spill == "":
		where = fmt.Sprintf("the full output could not be saved: %v", o.spillErr)
	case o.total > o.spill.limit:
		where = fmt.Sprintf("the first %s and the last %s of the output are in %s", sizeString(o.spill.headCap), sizeString(o.spill.tailCap), spill)
	default:
		where = "full output in " + spill
	}
	var b strings.Builder
	b.Write(head)
	if len(head) > 0 && head[len(head)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[… %d bytes cut (lines %d-%d); %s …]\n", cut, from, max(to, from), where)
	b.Write(tail)
	return b.String(), cut
}

// close finishes the spill file and removes it unless keep (the result
// will name it); it returns the name of a file it kept.
func (o *shellOutput) close(keep bool) string {
	if o.spill == nil {
		return ""
	}
	name, err := o.spill.finish(o.total, keep)
	if err != nil {
		o.spillErr = err
	}
	return name
}

// spillFile keeps a command's output on disk (mode 0600, since output may
// hold secrets) for the model to read later: all of it up to limit bytes,
// else the first quarter of limit and the last three quarters, with a
// line between saying what was cut. Until the command ends the last part
// is a ring in the file; finish puts it in order. The writes are the
// writer goroutine's, so that reading the command's pipe waits for the
// disk only when the disk falls behind by all of the buffers.
type spillFile struct {
	f                       *os.File
	limit, headCap, tailCap int64
	queue, free             chan []byte
	done                    chan struct{} // closed when the writer has written all it was given
	err                     error         // the writer's, read after done
}

// spillBuffers is how many chunks of output may wait for the disk, and
// spillChunk the size of one: what one read of a bash call's pipe gives
// at most. Until the output outgrows the result, it is read in smaller
// reads (headRead), so a call that prints little allocates little.
const (
	spillBuffers = 2
	spillChunk   = bigPipe
	headRead     = 64 << 10
)

func newSpillFile(limit int64) (*spillFile, error) {
	f, err := os.CreateTemp("", spillPattern)
	if err != nil {
		return nil, err
	}
	s := &spillFile{f: f, limit: limit, headCap: limit / 4, tailCap: limit - limit/4,
		queue: make(chan []byte, spillBuffers), free: make(chan []byte, spillBuffers), done: make(chan struct{})}
	for range spillBuffers {
		s.free <- make([]byte, 0, spillChunk)
	}
	// The writer: ends when finish closes the queue.
	go func() {
		defer close(s.done)
		var off int64
		for b := range s.queue {
			if s.err == nil {
				s.err = s.place(off, b)
			}
			off += int64(len(b))
			s.free <- b
		}
	}()
	return s, nil
}

// write hands p, the output's next bytes, to the writer.
func (s *spillFile) write(p []byte) {
	for len(p) > 0 {
		b := s.take()
		n := copy(b, p)
		s.give(b[:n])
		p = p[n:]
	}
}

// take waits for a free chunk, whole; give hands it to the writer with
// the output's next bytes in it (none: it is only returned).
func (s *spillFile) take() []byte { return (<-s.free)[:spillChunk] }

func (s *spillFile) give(b []byte) {
	if len(b) == 0 {
		s.free <- b
		return
	}
	s.queue <- b
}

// place writes b, the output from byte off on, where the file keeps it:
// the head in order, the rest in the ring after it.
func (s *spillFile) place(off int64, b []byte) error {
	for len(b) > 0 {
		at, n := off, int64(len(b))
		if off < s.headCap {
			n = min(n, s.headCap-off)
		} else {
			r := (off - s.headCap) % s.tailCap
			at, n = s.headCap+r, min(n, s.tailCap-r)
		}
		if _, err := s.f.WriteAt(b[:n], at); err != nil {
			return err
		}
		off, b = off+n, b[n:]
	}
	return nil
}

// finish waits for the writer, and then removes the file unless keep, or
// keeps it with what a total of bytes of output left in it in order. It
// returns the name of the file it kept.
func (s *spillFile) finish(total int64, keep bool) (string, error) {
	close(s.queue)
	<-s.done
	err := s.err
	if err == nil && keep && total > s.limit {
		err = s.order(total)
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil || !keep {
		os.Remove(s.f.Name())
		return "", err
	}
	return s.f.Name(), nil
}

// order makes the file head, a line saying what was cut, then the ring
// from its oldest byte: in a new file (the kernel copies, no byte passes
// through zot), which takes the old one's name.
func (s *spillFile) order(total int64) error {
	out, err := os.CreateTemp(filepath.Dir(s.f.Name()), spillPattern)
	if err != nil {
		return err
	}
	defer func() {
		out.Close()
		os.Remove(out.Name()) // gone already once renamed
	}()
	oldest := s.headCap + (total-s.headCap)%s.tailCap
	note := fmt.Sprintf("\n[… zot cut %d bytes here: this file keeps the first %s and the last %s of the command's output …]\n",
		total-s.limit, sizeString(s.headCap), sizeString(s.tailCap))
	for _, part := range []struct{ from, n int64 }{{0, s.headCap}, {-1, 0}, {oldest, s.limit - oldest}, {s.headCap, oldest - s.headCap}} {
		if part.from < 0 {
			_, err = io.WriteString(out, note)
		} else if _, err = s.f.Seek(part.from, io.SeekStart); err == nil {
			_, err = io.CopyN(out, s.f, part.n)
		}
		if err != nil {
			return err
		}
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(out.Name(), s.f.Name())
}
