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
