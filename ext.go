package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The extension host: subprocess extensions speaking protocol v1 (see
// docs/extensions.md) give zot slash commands, tools, event observers and
// interceptors. This file holds the types the UIs share, manifests and
// discovery, the manager and its hooks into the agent. ext_proc.go is one
// extension process; ext_cli.go is `zot ext`.

// ExtCommand is a slash command an extension registered.
type ExtCommand struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Extension   string `json:"extension"`
}

// CommandResponse is an extension's answer to a command: Action is prompt,
// insert, display or noop; Error, when set, is shown whatever the action.
// Panel, when set, opens an overlay panel.
type CommandResponse struct {
	Action  string    `json:"action"`
	Prompt  string    `json:"prompt,omitempty"`
	Insert  string    `json:"insert,omitempty"`
	Display string    `json:"display,omitempty"`
	Error   string    `json:"error,omitempty"`
	Panel   *ExtPanel `json:"open_panel,omitempty"`
}

// ExtPanel is an overlay an extension draws and that receives keys.
type ExtPanel struct {
	ID        string   `json:"id"`
	Title     string   `json:"title,omitempty"`
	Lines     []string `json:"lines,omitempty"`
	Footer    string   `json:"footer,omitempty"`
	Extension string   `json:"-"`
}

// PanelUpdate tells the host's UI to open, redraw or close a panel.
type PanelUpdate struct {
	Kind  string // open, render, close
	Panel ExtPanel
}

// ExtNote is a notify frame (Clear false) or a clear_notes frame (Clear
// true: retract every note of Extension).
type ExtNote struct {
	Extension string
	Level     string
	Message   string
	Clear     bool
}

// ReloadStats is what a reload did.
type ReloadStats struct {
	Stopped int      `json:"stopped"`
	Loaded  int      `json:"loaded"`
	Ready   int      `json:"ready"`
	Errors  []string `json:"errors"`
}

// ExtConfig is what the manager needs from its host.
type ExtConfig struct {
	Home, Cwd, Provider, Model string
	// Discover lists the extensions to run, in load order, as
	// discoverExtensions does. Start and every Reload call it, so that a
	// reload finds what was installed or changed meanwhile; nil runs none.
	Discover func() []*extFound
	// ReservedCommands are the host UI's own slash commands (a leading "/"
	// is ignored), which extensions may not take. The TUI passes its list;
	// -p, --json and rpc have no slash commands and reserve none.
	ReservedCommands []string
	// OnNote receives notify and clear_notes frames. It is called from the
	// extensions' reader goroutines, in each extension's frame order, and
	// must not block.
	OnNote func(ExtNote)
	// OnPanel receives panel changes, in frame order, from the same
	// goroutines: open (from a command_response with open_panel, before
	// InvokeCommand returns), render and close. It must not block.
	OnPanel func(PanelUpdate)
	// Log reports host-level problems to the user: a bad manifest, a missing
	// hello, a crash.
	Log func(format string, args ...any)
}

// ExtManager owns the extension processes of one zot process: it starts
// them, publishes their commands and tools, routes calls and events to
// them, and stops them. Its methods are safe for concurrent use.
type ExtManager struct {
	cfg      ExtConfig
	lim      extLimits
	ids      atomic.Uint64 // correlation ids, unique per host
	reserved map[string]bool

	runMu sync.Mutex // serialises Start, Reload and Shutdown
	gate  interceptGate

	// onReloadStop, when set (by tests), is called by Reload once it holds
	// the gate, before it stops the old extensions.
	onReloadStop func()

	mu      sync.Mutex // guards the fields below
	procs   []*extProc // the extensions, in load order: started ones and stand-ins
	gen     int        // bumped whenever procs is replaced
	cmds    map[string]*extProc
	cmdList []ExtCommand
	panels  map[string]*extProc
	regs    []*ToolRegistry
	session bool // session_start was emitted
	closed  bool
	loading bool // load syncs registrations once at its end

	syncMu sync.Mutex // serialises syncRegistrations
}

// NewExtManager returns a manager; Start starts the extensions.
func NewExtManager(cfg ExtConfig) *ExtManager {
	m := &ExtManager{cfg: cfg, lim: defaultExtLimits, reserved: map[string]bool{}, panels: map[string]*extProc{}}
	for _, n := range cfg.ReservedCommands {
		m.reserved[strings.TrimPrefix(n, "/")] = true
	}
	return m
}

// extManifest is an extension.json. Unknown fields are kept in Extra for
// readers that know them.
type extManifest struct {
	Name        string
	Version     string
	Exec        string
	Args        []string
	Language    string
	Description string
	Enabled     bool
	FailClosed  bool
	Permissions *extPermissions // nil: the manifest declares none, everything is allowed
	Extra       map[string]json.RawMessage

	Dir   string // absolute
	Path  string // the extension.json
	Scope string // --ext, project, global
}

// extManifestLimit bounds the size of an extension.json.
const extManifestLimit = 1 << 20

// readManifest reads and checks dir/extension.json. Its errors name the
// file and the field.
func readManifest(dir, scope string) (*extManifest, error) {
	mf, err := parseManifest(dir, scope)
	if err != nil {
		return nil, err
	}
	return mf, nil
}

// parseManifest is readManifest that, when the file is a JSON object with
// a bad field, returns with the error the fields it could read as well, so
// that the host can honour a broken manifest's fail_closed. A fail_closed
// of the wrong type counts as true: whoever wrote it meant something.
func parseManifest(dir, scope string) (*extManifest, error) {
	path := filepath.Join(dir, "extension.json")
	b, err := readUntrustedFile(path, extManifestLimit)
	if err != nil {
		if st, serr := os.Stat(dir); serr != nil {
			return nil, fmt.Errorf("directory %s does not exist", dir)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("%s is not a directory (give the extension's directory)", dir)
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no extension.json in this directory", dir)
		}
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %v", path, err)
	}
	mf := &extManifest{Enabled: true, Dir: dir, Path: path, Scope: scope, Extra: map[string]json.RawMessage{}}
	var bad error // the first bad field: permissions, then the others by name
	if v, ok := raw["permissions"]; ok {
		delete(raw, "permissions")
		if string(v) != "null" {
			if mf.Permissions, err = parsePermissions(v); err != nil {
				bad = fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	fields := map[string]any{
		"name": &mf.Name, "version": &mf.Version, "exec": &mf.Exec, "args": &mf.Args,
		"language": &mf.Language, "description": &mf.Description,
		"enabled": &mf.Enabled, "fail_closed": &mf.FailClosed,
	}
	wants := map[string]string{"args": "a list of strings", "enabled": "true or false", "fail_closed": "true or false"}
	for _, key := range sortedKeys(raw) { // the same error every time
		v := raw[key]
		dst, known := fields[key]
		if !known {
			mf.Extra[key] = v
			continue
		}
		if string(v) == "null" {
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil {
			if key == "fail_closed" {
				mf.FailClosed = true
			}
			want := wants[key]
			if want == "" {
				want = "a string"
			}
			if bad == nil {
				bad = fmt.Errorf("%s: field %q must be %s", path, key, want)
			}
		}
	}
	switch {
	case bad != nil:
	case mf.Name == "":
		bad = fmt.Errorf("%s: field \"name\" is required", path)
	case !validExtName(mf.Name):
		bad = fmt.Errorf("%s: field \"name\" %q may only hold letters, digits, '.', '_' and '-' (at most 64, not starting with '.' or '-')", path, mf.Name)
	case mf.Exec == "":
		bad = fmt.Errorf("%s: field \"exec\" is required", path)
	}
	return mf, bad
}

// extPermissions is a manifest's "permissions": what the extension may do
// over the protocol. A nil grant (no "permissions" in the manifest) allows
// everything; in a declared one, what is not listed is refused. It limits
// the protocol, not the process (see docs/security.md).
type extPermissions struct {
	Events    []extEventName `json:"events"`    // events it may observe, in extEventList order
	Intercept []extEventName `json:"intercept"` // events it may intercept, in extInterceptList order
	Tools     bool           `json:"tools"`     // it may register tools
	Commands  bool           `json:"commands"`  // it may register slash commands
}

// parsePermissions checks a manifest's "permissions" object. Its errors
// name the field; the caller adds the file.
func parsePermissions(raw json.RawMessage) (*extPermissions, error) {
	const shape = `an object like {"events": ["turn_start"], "intercept": ["tool_call"], "tools": false, "commands": true}`
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("field \"permissions\" must be %s", shape)
	}
	g := &extPermissions{Events: []extEventName{}, Intercept: []extEventName{}}
	for _, key := range sortedKeys(fields) { // the same error every time
		v := fields[key]
		if string(v) == "null" {
			continue
		}
		var err error
		switch key {
		case "events":
			g.Events, err = permissionNames(key, v, extEventList)
		case "intercept":
			g.Intercept, err = permissionNames(key, v, extInterceptList)
		case "tools", "commands":
			dst := &g.Tools
			if key == "commands" {
				dst = &g.Commands
			}
			if json.Unmarshal(v, dst) != nil {
				err = fmt.Errorf("field \"permissions.%s\" must be true or false", key)
			}
		default:
			err = fmt.Errorf("field \"permissions\" has an unknown key %q (known: events, intercept, tools, commands)", key)
		}
		if err != nil {
			return nil, err
		}
	}
	return g, nil
}

// permissionNames reads a list of event names, each one of known, and
// returns them once each, in the order of known.
func permissionNames(key string, v json.RawMessage, known []extEventName) ([]extEventName, error) {
	var names []extEventName
	if json.Unmarshal(v, &names) != nil {
		return nil, fmt.Errorf("field \"permissions.%s\" must be a list of event names (%s)", key, joinNames(known, ", "))
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("field \"permissions.%s\": %q is not one of %s", key, n, joinNames(known, ", "))
		}
	}
	out := []extEventName{}
	for _, n := range known {
		if slices.Contains(names, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// allows reports whether the grant lets the extension register or subscribe
// to name; kind is command, tool, event or intercept.
func (g *extPermissions) allows(kind, name string) bool {
	if g == nil {
		return true
	}
	switch kind {
	case "event":
		return slices.Contains(g.Events, extEventName(name))
	case "intercept":
		return slices.Contains(g.Intercept, extEventName(name))
	case "tool":
		return g.Tools
	case "command":
		return g.Commands
	}
	return false
}

// effective is the grant spelt out: everything for a nil one.
func (g *extPermissions) effective() extPermissions {
	if g == nil {
		return extPermissions{Events: slices.Clone(extEventList), Intercept: slices.Clone(extInterceptList), Tools: true, Commands: true}
	}
	return *g
}

// String is the grant as `zot ext list` and the logs show it:
// "events=turn_start,tool_call intercept=none tools=no commands=yes".
func (g *extPermissions) String() string {
	if g == nil {
		return "all (no permissions in manifest)"
	}
	list := func(names []extEventName) string {
		if len(names) == 0 {
			return "none"
		}
		return joinNames(names, ",")
	}
	return fmt.Sprintf("events=%s intercept=%s tools=%s commands=%s", list(g.Events), list(g.Intercept), yesNo(g.Tools), yesNo(g.Commands))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// validExtName keeps names safe as file names (logs, install directories).
func validExtName(name string) bool {
	if name == "" || len(name) > 64 || name[0] == '.' || name[0] == '-' {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// extFound is one extension directory discovery came across.
type extFound struct {
	Scope      string // --ext, project, global
	Dir        string
	Manifest   *extManifest // nil when Err is set
	Err        error
	Broken     *extManifest // with Err: the fields of a bad manifest that could be read
	ShadowedBy *extFound    // a higher-precedence manifest of the same name
}

// discoverExtensions lists extension directories in load order: the --ext
// paths as given, then ./.zot/extensions/*, then $ZOT_HOME/extensions/*,
// each by directory name. keep, when not nil, drops the ones it refuses
// (the wiring's trust check) before names are taken. The first manifest of
// a name wins, enabled or not; later ones are marked shadowed.
func discoverExtensions(home, cwd string, paths []string, noDiscovery bool, keep func(*extFound) bool) []*extFound {
	var out []*extFound
	seen := map[string]bool{}
	add := func(scope, dir string) {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		if seen[dir] {
			return
		}
		seen[dir] = true
		f := &extFound{Scope: scope, Dir: dir}
		if mf, err := parseManifest(dir, scope); err != nil {
			f.Err, f.Broken = err, mf
		} else {
			f.Manifest = mf
		}
		out = append(out, f)
	}
	for _, p := range paths {
		if filepath.Base(p) == "extension.json" {
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				p = filepath.Dir(p)
			}
		}
		add("--ext", p)
	}
	if !noDiscovery {
		for _, root := range []struct{ scope, dir string }{
			{"project", filepath.Join(cwd, ".zot", "extensions")},
			{"global", filepath.Join(home, "extensions")},
		} {
			entries, err := readUntrustedDir(root.dir)
			if err != nil {
				if !errors.Is(err, os.ErrNotExist) {
					out = append(out, &extFound{Scope: root.scope, Dir: root.dir, Err: fmt.Errorf("read %s: %w", root.dir, err)})
				}
				continue
			}
			for _, e := range entries { // sorted by name
				dir := filepath.Join(root.dir, e.Name())
				if strings.HasPrefix(e.Name(), ".") {
					continue // install's temporary directories, editor files
				}
				if st, err := os.Stat(dir); err != nil || !st.IsDir() {
					continue
				}
				add(root.scope, dir)
			}
		}
	}
	if keep != nil {
		out = slices.DeleteFunc(out, func(f *extFound) bool { return !keep(f) })
	}
	byName := map[string]*extFound{}
	for _, f := range out {
		if f.Manifest == nil {
			// A broken manifest takes no name, but one that an earlier
			// manifest shadows is not the user's choice either.
			if f.Broken != nil && validExtName(f.Broken.Name) {
				f.ShadowedBy = byName[f.Broken.Name]
			}
			continue
		}
		if w := byName[f.Manifest.Name]; w != nil {
			f.ShadowedBy = w
		} else {
			byName[f.Manifest.Name] = f
		}
	}
	return out
}

// Start asks cfg.Discover for the extensions, spawns them in parallel and waits until
// all are ready, or at most 3 s together; slower ones join when ready.
// Call it once; Reload restarts.
func (m *ExtManager) Start(ctx context.Context) ReloadStats {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	return m.load(ctx)
}

func (m *ExtManager) load(ctx context.Context) ReloadStats {
	stats := ReloadStats{Errors: []string{}}
	report := func(msg string) {
		stats.Errors = append(stats.Errors, msg)
		m.logf("%s", msg)
	}
	m.mu.Lock()
	closed := m.closed
	m.loading = !closed
	m.mu.Unlock()
	if closed {
		stats.Errors = append(stats.Errors, "extensions were shut down")
		return stats
	}
	// What to run, in load order. A fail_closed extension that cannot run
	// (a broken manifest, a failed start) keeps its place as a stand-in
	// that blocks for it: allowing would let through what it guards.
	type loadItem struct {
		mf  *extManifest
		p   *extProc
		err error // why it cannot run
	}
	var items []loadItem
	var found []*extFound
	if m.cfg.Discover != nil {
		found = m.cfg.Discover()
	}
	for _, f := range found {
		switch {
		case f.Err != nil && f.Broken != nil && f.Broken.FailClosed && f.Broken.Enabled && f.ShadowedBy == nil:
			mf := f.Broken
			if !validExtName(mf.Name) {
				mf.Name = f.Dir // a name for the messages; the stand-in uses no file of its name
			}
			items = append(items, loadItem{mf: mf, err: fmt.Errorf("extension %q skipped: %w", mf.Name, f.Err)})
		case f.Err != nil:
			report("extension skipped: " + f.Err.Error())
		case f.ShadowedBy != nil:
			if f.Scope == "--ext" { // discovered ones are shadowed on purpose; zot ext list shows them
				report(fmt.Sprintf("extension %q in %s is shadowed by the --ext %s of the same name; not started", f.Manifest.Name, f.Dir, f.ShadowedBy.Dir))
			}
		case !f.Manifest.Enabled:
			if f.Scope == "--ext" {
				report(fmt.Sprintf("extension %q in %s is disabled (\"enabled\": false); not started", f.Manifest.Name, f.Dir))
			}
		default:
			items = append(items, loadItem{mf: f.Manifest})
		}
	}
	var wg sync.WaitGroup
	for i := range items {
		if items[i].err != nil {
			continue
		}
		wg.Add(1)
		// Each spawn returns as soon as the process is started.
		go func() {
			defer wg.Done()
			items[i].p, items[i].err = m.spawn(items[i].mf)
		}()
	}
	wg.Wait()
	var procs, running []*extProc
	for _, it := range items {
		switch {
		case it.err == nil:
			procs, running = append(procs, it.p), append(running, it.p)
		case it.mf.FailClosed:
			report(it.err.Error() + "; it is fail_closed: until it is fixed and the extensions are reloaded, the tool calls, turns and messages it may intercept are blocked")
			procs = append(procs, m.standIn(it.mf, it.err))
		default:
			report(it.err.Error())
		}
	}
	m.mu.Lock()
	m.procs = procs
	m.gen++
	m.mu.Unlock()
	stats.Loaded = len(running)

	deadline := time.NewTimer(m.lim.startup)
	defer deadline.Stop()
wait:
	for _, p := range running {
		select {
		case <-p.ready:
		case <-p.dead:
		case <-deadline.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	for _, p := range running {
		switch {
		case p.isDead():
			stats.Errors = append(stats.Errors, p.deadErr().Error())
		case p.isReady():
			stats.Ready++
		default:
			m.logf("extension %q is not ready after %s; going on without it until it is (see %s)", p.name(), m.lim.startup, p.logPath)
		}
	}
	m.mu.Lock()
	m.loading = false
	m.mu.Unlock()
	m.syncRegistrations()
	return stats
}

// Reload stops every extension, asks cfg.Discover again, starts what it
// lists, and rebuilds the tools of the attached agents in place. It holds
// the intercept gate throughout, so intercepts wait for the new extensions
// instead of finding none; it first waits for the intercepts in progress
// (each bounded by its own timeout), and gives up without changing
// anything if ctx ends meanwhile. Commands and tools stay with the old
// extensions until the new ones have registered; once the old ones are
// stopping, calls to them fail with an error naming the extension.
func (m *ExtManager) Reload(ctx context.Context) ReloadStats {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	if err := m.gate.lock(ctx); err != nil {
		return ReloadStats{Errors: []string{fmt.Sprintf("reload of the extensions cancelled while intercepts were in progress: %v; nothing was changed", err)}}
	}
	defer m.gate.unlock()
	m.mu.Lock()
	closed, old := m.closed, m.procs
	m.loading = !closed // nothing is published from the old extensions as they stop
	m.mu.Unlock()
	if closed {
		return ReloadStats{Errors: []string{"extensions were shut down"}}
	}
	if m.onReloadStop != nil {
		m.onReloadStop()
	}
	m.stopAll(ctx, old)
	stats := m.load(ctx)
	for _, p := range old {
		if p.started() { // a stand-in ran nothing to stop
			stats.Stopped++
		}
	}
	m.mu.Lock()
	session := m.session
	m.mu.Unlock()
	if session {
		m.broadcast(extEvent{Name: extEventSessionStart}) // the new processes join a running session
	}
	return stats
}

// Shutdown stops every extension, all in parallel: shutdown, 2 s, SIGTERM,
// 1 s, SIGKILL. Cancelling ctx goes straight to SIGKILL. The stopped
// extensions stay in place, so what is asked of them afterwards fails as
// it would had they exited: with an error naming the extension, and a
// block from a fail_closed interceptor.
func (m *ExtManager) Shutdown(ctx context.Context) {
	m.runMu.Lock()
	defer m.runMu.Unlock()
	m.mu.Lock()
	procs := m.procs
	m.closed = true
	m.mu.Unlock()
	m.stopAll(ctx, procs)
}

func (m *ExtManager) stopAll(ctx context.Context, procs []*extProc) {
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		// Ends when the extension's stop sequence is over.
		go func() {
			defer wg.Done()
			p.stop(ctx)
		}()
	}
	wg.Wait()
}

func (m *ExtManager) snapshot() []*extProc {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.procs
}

// syncRegistrations publishes the commands and tools of the ready (and the
// dead) extensions, resolving conflicts: built-ins win, then the first
// extension in load order. Every shadowed name goes to the loser's log.
func (m *ExtManager) syncRegistrations() {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	m.mu.Lock()
	procs, gen, loading := m.procs, m.gen, m.loading
	regs := append([]*ToolRegistry(nil), m.regs...)
	m.mu.Unlock()
	if loading {
		return
	}

	shadow := map[*extProc][]string{}
	cmds := map[string]*extProc{}
	var cmdList []ExtCommand
	toolOwner := map[string]*extProc{}
	var tools []Tool
	builtinTool := map[string]bool{}
	for _, n := range BuiltinToolNames {
		builtinTool[n] = true
	}
	for _, p := range procs {
		if !p.isReady() && !p.isDead() {
			continue
		}
		pc, pt := p.registrations()
		for _, c := range pc {
			switch {
			case m.reserved[c.Name]:
				shadow[p] = append(shadow[p], "command /"+c.Name+" (a built-in command wins)")
			case cmds[c.Name] != nil:
				shadow[p] = append(shadow[p], fmt.Sprintf("command /%s (extension %q loads first)", c.Name, cmds[c.Name].name()))
			default:
				cmds[c.Name] = p
				cmdList = append(cmdList, ExtCommand{Name: c.Name, Description: c.Description, Extension: p.name()})
			}
		}
		for _, t := range pt {
			switch {
			case builtinTool[t.Name]:
				shadow[p] = append(shadow[p], "tool "+t.Name+" (the built-in tool wins)")
			case toolOwner[t.Name] != nil:
				shadow[p] = append(shadow[p], fmt.Sprintf("tool %s (extension %q loads first)", t.Name, toolOwner[t.Name].name()))
			default:
				toolOwner[t.Name] = p
				tools = append(tools, &extTool{p: p, reg: t})
			}
		}
	}
	m.mu.Lock()
	stale := gen != m.gen
	if !stale {
		m.cmds, m.cmdList = cmds, cmdList
	}
	m.mu.Unlock()
	if stale {
		return // a reload replaced the extensions; its own sync follows
	}
	lost := map[string]bool{}
	for _, reg := range regs {
		for _, name := range reg.SetSource("ext", tools) {
			if p := toolOwner[name]; p != nil && !lost[name] {
				lost[name] = true
				shadow[p] = append(shadow[p], "tool "+name+" (a tool source registered before extensions wins)")
			}
		}
	}
	for _, p := range procs {
		p.setShadowed(shadow[p])
	}
}

// registrations are the extension's commands and tools. Only what its
// grant allows is there (register refuses the rest); the filter is a second
// check before anything is published.
func (p *extProc) registrations() (commands, tools []extRegistration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.mf.Permissions
	for _, r := range p.commands {
		if g.allows("command", r.Name) {
			commands = append(commands, r)
		}
	}
	for _, r := range p.tools {
		if g.allows("tool", r.Name) {
			tools = append(tools, r)
		}
	}
	return commands, tools
}

// extState is what `zot ext list` learns about an extension's last run.
type extState struct {
	Commands []string `json:"commands"`
	Tools    []string `json:"tools"`
	Shadowed []string `json:"shadowed"`
	Refused  []string `json:"refused,omitempty"` // outside the manifest's permissions
}

func extStatePath(home, name string) string {
	return filepath.Join(home, "logs", "ext-"+name+".state.json")
}

// setShadowed logs names shadowed for the first time and records the
// registrations for `zot ext list`.
func (p *extProc) setShadowed(list []string) {
	p.mu.Lock()
	p.shadowed = list
	var fresh []string
	for _, s := range list {
		if !p.logged[s] {
			p.logged[s] = true
			fresh = append(fresh, s)
		}
	}
	p.mu.Unlock()
	for _, s := range fresh {
		p.log.Printf("shadowed: %s", s)
	}
	p.recordState()
}

// recordState writes the extension's registrations, shadowed names and
// refusals to its state file when they changed.
func (p *extProc) recordState() {
	if !p.started() {
		return // a stand-in registered nothing, and its name may not be a file name
	}
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	cmds, tools := p.registrations()
	var st extState
	for _, c := range cmds {
		st.Commands = append(st.Commands, c.Name)
	}
	for _, t := range tools {
		st.Tools = append(st.Tools, t.Name)
	}
	p.mu.Lock()
	st.Shadowed, st.Refused = p.shadowed, slices.Clone(p.refused)
	key := fmt.Sprint(st.Commands, st.Tools, st.Shadowed, st.Refused)
	changed := key != p.stateKey
	p.stateKey = key
	p.mu.Unlock()
	if !changed {
		return
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	b = append(b, '\n')
	path := extStatePath(p.m.cfg.Home, p.name())
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return // as the last run left it
	}
	if err := writeFileAtomic(path, b, 0o600); err != nil {
		p.log.Printf("record state for `zot ext list` in %s: %v", path, err)
	}
}

// extTool is an extension's tool in the agent's registry.
type extTool struct {
	p   *extProc
	reg extRegistration
}

func (t *extTool) Name() string { return t.reg.Name }

func (t *extTool) Description() string {
	if t.reg.Description == "" {
		return "Tool " + t.reg.Name + " of extension " + t.p.name() + "."
	}
	return t.reg.Description
}

func (t *extTool) Schema() json.RawMessage { return t.reg.Schema }

// Run sends tool_call and waits up to 60 s for tool_result. The result
// names the extension in Details.
func (t *extTool) Run(ctx context.Context, args json.RawMessage, _ func(string)) ToolResult {
	msg, err := t.p.call(ctx, frameToolResult, t.p.m.lim.tool, func(id string) any {
		return hostToolCall{Type: frameToolCall, ID: id, Name: t.reg.Name, Args: argsJSON(args)}
	})
	if err != nil {
		r := errorResult("%v", err)
		r.Details = "extension " + t.p.name()
		return r
	}
	return t.p.extToolResult(msg)
}

// ExtStage is the extensions' stage at each hook point they intercept.
var ExtStage = Stage{Name: "extensions", Order: OrderIntercept}

// Attach gives the agent the extensions' tools (source "ext", after the
// built-ins) and their interceptors as stages of its pipeline — tool_call
// (ToolGate), turn_start and assistant_message — and keeps its tools
// current across Reload.
func (m *ExtManager) Attach(a *Agent) {
	m.mu.Lock()
	m.regs = append(m.regs, a.Tools)
	m.mu.Unlock()
	a.Pipeline.AddToolGate(ExtStage, m.ToolGate)
	a.Pipeline.AddTurnGate(ExtStage, m.beforeTurn)
	a.Pipeline.AddMessageGate(ExtStage, m.beforeAssistantMessage, m.holdText)
	m.syncRegistrations()
}

// consults reports whether the extension is asked about ev: its grant
// allows intercepting ev, and it subscribed, or it is fail_closed and not
// (yet) ready, so what it would intercept is unknown.
func (p *extProc) consults(ev extEventName) bool {
	if !p.mf.Permissions.allows("intercept", string(ev)) {
		return false
	}
	return p.intercepts(ev) || (p.mf.FailClosed && !p.isReady())
}

func (p *extProc) intercepts(ev extEventName) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.intercept[ev]
}

func (p *extProc) subscribed(ev extEventName) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.events[ev]
}

func (m *ExtManager) interceptors(ev extEventName) []*extProc {
	var out []*extProc
	for _, p := range m.snapshot() {
		if p.consults(ev) {
			out = append(out, p)
		}
	}
	return out
}

// holdText says whether the answer's text must wait for the
// assistant_message interceptors rather than stream: while one may
// intercept, and while a reload is replacing them.
func (m *ExtManager) holdText() bool {
	if !m.gate.tryEnter() {
		return true
	}
	defer m.gate.leave()
	for _, p := range m.snapshot() {
		if p.consults(extEventAssistantMessage) {
			return true
		}
	}
	return false
}

// ask sends one event_intercept and waits up to 5 s. skip is true when a
// fail_closed extension, waited for until ready, turns out not to intercept
// ev.
func (m *ExtManager) ask(ctx context.Context, p *extProc, ev extEvent) (msg extMsg, skip bool, err error) {
	if g := p.mf.Permissions; !g.allows("intercept", string(ev.Name)) {
		// consults keeps this from happening; this is the second check.
		p.log.Printf("not sent: %s intercept, outside the manifest's permissions (%s)", ev.Name, g)
		return msg, true, nil
	}
	if !p.isReady() && !p.intercepts(ev.Name) {
		wctx, cancel := context.WithTimeout(ctx, m.lim.intercept)
		select {
		case <-p.ready:
		case <-p.dead:
		case <-wctx.Done():
		}
		cancel()
		switch {
		case p.isDead():
			return msg, false, p.deadErr()
		case ctx.Err() != nil:
			return msg, false, ctx.Err()
		case !p.isReady():
			return msg, false, fmt.Errorf("extension %q was not ready within %s; see %s", p.name(), m.lim.intercept, p.logPath)
		case !p.intercepts(ev.Name):
			return msg, true, nil
		}
	}
	msg, err = p.call(ctx, frameInterceptResponse, m.lim.intercept, func(id string) any {
		ev.Frame, ev.ID = frameEventIntercept, id
		return ev
	})
	return msg, false, err
}

// failed decides for an interceptor that gave no valid answer: allow (and
// log), or block when its manifest says fail_closed.
func (m *ExtManager) failed(p *extProc, ev extEventName, err error) (block bool, reason string) {
	if p.mf.FailClosed {
		reason = fmt.Sprintf("blocked: extension %q is fail_closed and gave no valid answer about %s: %v", p.name(), ev, err)
		p.log.Printf("%s", reason)
		return true, reason
	}
	p.log.Printf("%s intercept: %v; allowed", ev, err)
	return false, ""
}

// ToolGate is the tool_call intercept chain. Interceptors are asked one at a
// time in load order; each sees the arguments as the ones before it left
// them. The first block wins and its reason becomes the tool's error result;
// modified_args (a JSON object) replaces the arguments.
func (m *ExtManager) ToolGate(ctx context.Context, call ToolCall) GateResult {
	if m.gate.enter(ctx) != nil {
		return GateResult{Verdict: GateDeny, Reason: "not run: aborted while the extensions were reloading"}
	}
	defer m.gate.leave()
	procs := m.interceptors(extEventToolCall)
	if len(procs) == 0 {
		return GateResult{}
	}
	var res GateResult
	args := call.Args
	for _, p := range procs {
		by := "extension:" + p.name()
		msg, skip, err := m.ask(ctx, p, extEvent{Name: extEventToolCall, ToolID: call.ID, ToolName: call.Name, ToolArgs: args})
		if skip {
			continue
		}
		if err == nil && !msg.Block && len(msg.ModifiedArgs) > 0 && string(msg.ModifiedArgs) != "null" && !isJSONObject(msg.ModifiedArgs) {
			err = fmt.Errorf("modified_args is not a JSON object: %s", excerpt(msg.ModifiedArgs))
		}
		if err != nil && ctx.Err() != nil {
			res.Verdict, res.Reason = GateDeny, "not run: aborted while extensions were deciding"
			return res
		}
		if err != nil {
			block, reason := m.failed(p, extEventToolCall, err)
			if block {
				res.Verdict, res.Reason = GateDeny, reason
				res.Notes = append(res.Notes, GateNote{By: by, Decision: DecisionBlock, Reason: reason})
				return res
			}
			res.Notes = append(res.Notes, GateNote{By: by, Decision: DecisionAllow, Reason: "no valid answer: " + err.Error()})
			continue
		}
		switch {
		case msg.Block:
			reason := msg.Reason
			if reason == "" {
				reason = fmt.Sprintf("blocked by extension %q", p.name())
			}
			res.Verdict, res.Reason = GateDeny, reason
			res.Notes = append(res.Notes, GateNote{By: by, Decision: DecisionBlock, Reason: reason})
			return res
		case len(msg.ModifiedArgs) > 0 && string(msg.ModifiedArgs) != "null":
			var buf bytes.Buffer
			json.Compact(&buf, msg.ModifiedArgs) // valid: decoded as part of the frame
			args = buf.Bytes()
			res.Args = args
			res.Notes = append(res.Notes, GateNote{By: by, Decision: DecisionRewrite, Reason: msg.Reason})
		default:
			res.Notes = append(res.Notes, GateNote{By: by, Decision: DecisionAllow, Reason: msg.Reason})
		}
	}
	return res
}

// beforeTurn is the turn_start intercept chain: block only.
func (m *ExtManager) beforeTurn(ctx context.Context, step int) (bool, string) {
	if m.gate.enter(ctx) != nil {
		return false, "" // the agent sees the cancellation itself
	}
	defer m.gate.leave()
	for _, p := range m.interceptors(extEventTurnStart) {
		msg, skip, err := m.ask(ctx, p, extEvent{Name: extEventTurnStart, Step: step})
		switch {
		case skip:
		case err != nil && ctx.Err() != nil:
			return false, "" // the agent sees the cancellation itself
		case err != nil:
			if block, reason := m.failed(p, extEventTurnStart, err); block {
				return true, reason
			}
		case msg.Block:
			if msg.Reason == "" {
				return true, fmt.Sprintf("turn blocked by extension %q", p.name())
			}
			return true, msg.Reason
		}
	}
	return false, ""
}

// beforeAssistantMessage is the assistant_message intercept chain: block
// hides the message from the user, who is told the reason (returned in
// place of the text), replace_text rewrites what the user sees and the
// next interceptor gets the rewritten text. The transcript keeps the
// original either way (the agent sees to that).
func (m *ExtManager) beforeAssistantMessage(ctx context.Context, text string) (string, bool) {
	if text == "" {
		return "", false
	}
	if m.gate.enter(ctx) != nil {
		return "", true // never show what an interceptor did not get to see
	}
	defer m.gate.leave()
	for _, p := range m.interceptors(extEventAssistantMessage) {
		msg, skip, err := m.ask(ctx, p, extEvent{Name: extEventAssistantMessage, Text: text})
		switch {
		case skip:
		case err != nil && ctx.Err() != nil:
			return "", true // never show what an interceptor did not get to see
		case err != nil:
			if block, reason := m.failed(p, extEventAssistantMessage, err); block {
				return "the assistant's message is withheld: " + reason, true
			}
		case msg.Block:
			if msg.Reason == "" {
				return fmt.Sprintf("the assistant's message was blocked by extension %q", p.name()), true
			}
			return fmt.Sprintf("extension %q blocked the assistant's message: %s", p.name(), msg.Reason), true
		case msg.ReplaceText != "":
			text = msg.ReplaceText
		}
	}
	return text, false
}

// interceptGate keeps interception whole across a reload. The intercept
// chains (ToolGate, turn_start, assistant_message, holdText) enter it,
// many at once, while they consult the extensions; Reload holds it alone
// from stopping the old extensions until the new ones are loaded. A chain
// that comes while Reload holds it waits, so no tool call, turn or message
// gets past extensions that are being replaced. It is a read-write lock
// whose waiting honours a context. Only Reload locks it (under runMu), so
// there is one writer at a time.
type interceptGate struct {
	mu      sync.Mutex
	readers int           // chains inside
	held    bool          // Reload holds it or waits for the readers to leave
	waiting int           // chains waiting for Reload, for tests to see
	changed chan struct{} // closed and replaced when held goes, or the last reader leaves while held
}

// enter waits while Reload holds the gate. It fails only when ctx ends
// first; a context ended already does not keep it from entering.
func (g *interceptGate) enter(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.held {
		ch := g.next()
		g.waiting++
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		g.mu.Lock()
		g.waiting--
		if g.held && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	g.readers++
	return nil
}

// tryEnter enters unless Reload holds the gate.
func (g *interceptGate) tryEnter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held {
		return false
	}
	g.readers++
	return true
}

func (g *interceptGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.readers--
	if g.readers == 0 && g.held {
		g.broadcast()
	}
}

// lock keeps new chains out at once, then waits for those inside to leave.
// If ctx ends first it lets the waiting chains in again and fails.
func (g *interceptGate) lock(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = true
	for g.readers > 0 {
		ch := g.next()
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		g.mu.Lock()
		if g.readers > 0 && ctx.Err() != nil {
			g.release()
			return ctx.Err()
		}
	}
	return nil
}

func (g *interceptGate) unlock() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.release()
}

// release lets the waiting chains in; g.mu is held.
func (g *interceptGate) release() {
	g.held = false
	g.broadcast()
}

// next is the channel the next change closes; g.mu is held.
func (g *interceptGate) next() chan struct{} {
	if g.changed == nil {
		g.changed = make(chan struct{})
	}
	return g.changed
}

// broadcast wakes whoever waits for a change; g.mu is held.
func (g *interceptGate) broadcast() {
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}

// Observe passes agent events to the extensions subscribed to them:
// turn_start, tool_call, turn_end and assistant_message (its text as the
// user saw it). It never blocks: each extension has a bounded queue, and one
// that falls behind loses the oldest events.
func (m *ExtManager) Observe(e Event) {
	var ev extEvent
	switch e.Type {
	case EventTurnStart:
		ev = extEvent{Name: extEventTurnStart, Step: e.Step}
	case EventToolCall:
		ev = extEvent{Name: extEventToolCall, ToolID: e.ID, ToolName: e.Name, ToolArgs: e.Args}
	case EventTurnEnd:
		ev = extEvent{Name: extEventTurnEnd, Stop: e.Stop, Error: e.Error}
	case EventAssistantMessage:
		ev = extEvent{Name: extEventAssistantMessage, Text: Message{Content: e.Content}.Text()}
	default:
		return
	}
	m.broadcast(ev)
}

// SessionStart emits session_start; only the first call does.
func (m *ExtManager) SessionStart() {
	m.mu.Lock()
	first := !m.session
	m.session = true
	m.mu.Unlock()
	if first {
		m.broadcast(extEvent{Name: extEventSessionStart})
	}
}

func (m *ExtManager) broadcast(ev extEvent) {
	ev.Frame = frameEvent
	var line []byte
	for _, p := range m.snapshot() {
		// subscribe admitted only granted events; the grant is checked
		// again here so that nothing outside it is ever sent.
		if !p.subscribed(ev.Name) || !p.mf.Permissions.allows("event", string(ev.Name)) {
			continue
		}
		if line == nil {
			var err error
			if line, err = encodeFrame(ev); err != nil {
				m.logf("%v", err)
				return
			}
		}
		p.q.push(extOut{line: line, event: true})
	}
}

// Commands lists the extensions' slash commands, in load order, without
// those a built-in or an earlier extension shadows.
func (m *ExtManager) Commands() []ExtCommand {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ExtCommand(nil), m.cmdList...)
}

// InvokeCommand runs /name with args and waits up to 30 s for the
// response. An unknown action comes back as noop with Error set; an
// open_panel has already gone to OnPanel (open) when this returns.
func (m *ExtManager) InvokeCommand(ctx context.Context, name, args string) (CommandResponse, error) {
	name = strings.TrimPrefix(name, "/")
	m.mu.Lock()
	p := m.cmds[name]
	m.mu.Unlock()
	if p == nil {
		return CommandResponse{}, fmt.Errorf("no extension has a command /%s (see zot ext list)", name)
	}
	msg, err := p.call(ctx, frameCommandResponse, m.lim.command, func(id string) any {
		return hostCommandInvoked{Type: frameCommandInvoked, ID: id, Name: name, Args: strings.TrimSpace(args)}
	})
	if err != nil {
		return CommandResponse{}, err
	}
	resp := CommandResponse{Action: msg.Action, Prompt: msg.Prompt, Insert: msg.Insert, Display: msg.Display, Error: msg.Error}
	if msg.OpenPanel != nil && msg.OpenPanel.ID != "" {
		panel := *msg.OpenPanel
		panel.Extension = p.name()
		resp.Panel = &panel
	}
	switch resp.Action {
	case "prompt", "insert", "display", "noop":
	case "":
		resp.Action = "noop"
	default:
		p.log.Printf("command /%s: unknown action %q", name, resp.Action)
		if resp.Error == "" {
			resp.Error = fmt.Sprintf("extension %q answered /%s with unknown action %q", p.name(), name, resp.Action)
		}
		resp.Action = "noop"
	}
	return resp, nil
}

// openPanel records who owns a panel a command_response opened and tells
// the UI, from the reader goroutine, so that renders after it stay in order.
func (m *ExtManager) openPanel(p *extProc, panel ExtPanel) {
	if panel.ID == "" {
		p.log.Printf("open_panel without an id ignored")
		return
	}
	panel.Extension = p.name()
	m.mu.Lock()
	m.panels[panel.ID] = p
	m.mu.Unlock()
	m.panelUpdate(PanelUpdate{Kind: "open", Panel: panel})
}

// panelFromExt handles panel_render and panel_close for the extension's own
// open panels.
func (m *ExtManager) panelFromExt(p *extProc, msg extMsg) {
	m.mu.Lock()
	owner := m.panels[msg.PanelID]
	if owner == p && msg.Type == framePanelClose {
		delete(m.panels, msg.PanelID)
	}
	m.mu.Unlock()
	if owner != p {
		p.log.Printf("%s for panel %q that it has not open; ignored", msg.Type, msg.PanelID)
		return
	}
	panel := ExtPanel{ID: msg.PanelID, Extension: p.name()}
	kind := "close"
	if msg.Type == framePanelRender {
		kind, panel.Title, panel.Lines, panel.Footer = "render", msg.Title, msg.Lines, msg.Footer
	}
	m.panelUpdate(PanelUpdate{Kind: kind, Panel: panel})
}

// PanelKey sends a key the user pressed in a panel to its extension. key
// is a name (up, down, enter, ctrl+a, rune, paste, …); text carries the
// character of a rune key and the text of a paste.
func (m *ExtManager) PanelKey(panelID, key, text string) error {
	m.mu.Lock()
	p := m.panels[panelID]
	m.mu.Unlock()
	if p == nil {
		return fmt.Errorf("no extension panel %q is open", panelID)
	}
	return p.send(hostPanelFrame{Type: framePanelKey, PanelID: panelID, Key: key, Text: text})
}

// ClosePanel tells the extension the user closed its panel.
func (m *ExtManager) ClosePanel(panelID string) error {
	m.mu.Lock()
	p := m.panels[panelID]
	delete(m.panels, panelID)
	m.mu.Unlock()
	if p == nil {
		return fmt.Errorf("no extension panel %q is open", panelID)
	}
	return p.send(hostPanelFrame{Type: framePanelClose, PanelID: panelID})
}

// procDied closes the panels of an extension that can no longer draw them.
func (m *ExtManager) procDied(p *extProc) {
	var closed []string
	m.mu.Lock()
	for id, owner := range m.panels {
		if owner == p {
			delete(m.panels, id)
			closed = append(closed, id)
		}
	}
	m.mu.Unlock()
	for _, id := range closed {
		m.panelUpdate(PanelUpdate{Kind: "close", Panel: ExtPanel{ID: id, Extension: p.name()}})
	}
}

func (m *ExtManager) panelUpdate(u PanelUpdate) {
	if m.cfg.OnPanel != nil {
		m.cfg.OnPanel(u)
	}
}

func (m *ExtManager) note(n ExtNote) {
	if m.cfg.OnNote != nil {
		m.cfg.OnNote(n)
	}
}

func (m *ExtManager) logf(format string, args ...any) {
	if m.cfg.Log != nil {
		m.cfg.Log(format, args...)
	}
}

// stderrExtHooks prints notes as "[name] level: message" and host problems
// as "zot: …" to w, as -p and --json do.
func stderrExtHooks(w io.Writer) ExtConfig {
	var mu sync.Mutex
	print := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(w, line)
	}
	return ExtConfig{
		OnNote: func(n ExtNote) {
			if !n.Clear {
				print(fmt.Sprintf("[%s] %s: %s", n.Extension, n.Level, sanitize(n.Message)))
			}
		},
		Log: func(format string, args ...any) {
			print("zot: " + sanitize(fmt.Sprintf(format, args...)))
		},
	}
}
