package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The tools' frame: the Tool interface; the ToolRegistry the agent finds
// tools in (built-in, skill, extension and MCP tools, each set under its
// source, one filter over them all); and the ToolEnv the built-in tools
// share (the working directory, the jail, the sandbox a command runs in,
// the spill files kept) with their limits. Each tool is a file of its own
// (tools_read.go, tools_write.go, tools_edit.go, tools_bash.go,
// tools_grep.go, tools_find.go, tools_ls.go, tools_plan.go); their
// arguments are tools_args.go's, and how they open what was checked
// tools_open*.go's.

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

// The descriptions and schemas of the tools go with every request: they
// say what the model must know to call a tool right, and no more
// (docs/usage.md#fewer-tokens).

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
	removeSpareCgroup() // the empty one kept for a next command; one still to come makes another
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
