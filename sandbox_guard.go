package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// The guard keeps, around every sandboxed command, what programs outside
// the sandbox read or run as it was: git's directory and what in it
// decides which programs git runs (sandbox_git.go), the rule files zot
// reads at its next start, the project's .zot/, .claude/ and .mcp.json,
// and the files trusted programs name. Where the kernel can, these are
// read-only inside the sandbox (the namespaces path binds each that
// exists read-only over itself, and pins .git in place); but it cannot
// refuse a file that does not exist yet (a new .git/commondir, a new
// runok.yml that shadows the project's), and Landlock alone cannot take
// any of them out of a writable directory. So before each command the
// guard notes their state — cheaply: one lstat each, the content read
// only when the lstat changed — and after it, when nothing of the command
// runs any more, compares: what changed is moved aside (never deleted:
// NAME.zot-refused-XXXXXX), what was there is put back, and the command's
// result says so. A change made between commands (by the user, or zot's
// own "save the rule") is taken as the new state.

// guardKind is what about a guarded path must not change.
type guardKind uint8

const (
	// guardFile: its content, its mode, or that it does not exist.
	guardFile guardKind = iota
	// guardTree: everything beneath it, entry by entry (hooks).
	guardTree
	// guardDir: which directory it is (not replaced, renamed or
	// removed), or that it does not exist; what is in it is guarded by
	// other entries or not at all.
	guardDir
	// guardHead: a git HEAD, which git itself changes; it must stay a
	// HEAD git accepts, or git looks elsewhere for its directory.
	guardHead
	// guardIndex: a git index, which git itself changes; the submodules
	// it records must not gain a repository (git runs git in each).
	guardIndex
	// guardIsDir: it stays a directory, any directory (a git directory's
	// objects and refs: without them git takes the directory for none).
	guardIsDir
	// guardTodo: an interactive rebase's list of what is left to do, which
	// git itself writes; it must not gain an exec line (`git rebase
	// --continue` would run it, outside the sandbox).
	guardTodo
)

// guardBind is how the namespaces path binds a guarded path that exists.
type guardBind uint8

const (
	bindNone     guardBind = iota
	bindPin                // over itself, writable: it cannot be renamed or removed
	bindReadOnly           // over itself, read-only, with everything beneath
)

// guardedPath is one path the sandbox keeps from commands and from write
// and edit.
type guardedPath struct {
	Path string // absolute, symlinks resolved
	Kind guardKind
	Bind guardBind
	Root string // guardIndex: the work tree the index's paths lie in
}

// guardEntry is one path as the guard saw it.
type guardEntry struct {
	typ          byte // 0: nothing there; 'd' directory, 'f' file, 'l' link, 'o' anything else
	perm         fs.FileMode
	dev, ino     uint64
	size         int64
	mtime, ctime int64
	data         []byte // a file's content, a link's target
	whole        bool   // data is all of it (a file larger than guardKeepLimit is compared by its lstat alone)
}

// guardKeepLimit is the largest file whose content the guard keeps to put
// back.
const guardKeepLimit = 1 << 20

// guardTreeLimit bounds the entries of one guarded tree.
const guardTreeLimit = 2000

// sameLstat says whether two entries are the same as far as lstat shows:
// the same file, not written since.
func (e guardEntry) sameLstat(o guardEntry) bool {
	return e.typ == o.typ && e.perm == o.perm && e.dev == o.dev && e.ino == o.ino && e.size == o.size && e.mtime == o.mtime && e.ctime == o.ctime
}

// same says whether a program reading both would see the same: a
// directory is the same one, a file has the same mode and content, a
// link the same target.
func (e guardEntry) same(o guardEntry) bool {
	if e.typ != o.typ {
		return false
	}
	switch e.typ {
	case 0:
		return true
	case 'd':
		return e.dev == o.dev && e.ino == o.ino
	case 'f':
		if e.whole && o.whole {
			return e.perm == o.perm && string(e.data) == string(o.data)
		}
	case 'l':
		return string(e.data) == string(o.data)
	}
	return e.sameLstat(o)
}

// guardState is one guarded path's state.
type guardState struct {
	entry guardEntry
	tree  map[string]guardEntry // guardTree: beneath the path, by relative path
	links map[string]guardEntry // guardIndex: the .git of each submodule it records
	// broken is a directory on the way to the path that is not one any
	// more (a link or a file put in its place): the path is not there.
	broken string
}

// sandboxGuard checks the guarded paths around commands; one per Sandbox.
type sandboxGuard struct {
	paths    []guardedPath // sorted: a directory before what lies in it
	writable func(string) bool

	mu      sync.Mutex
	cache   map[string]guardEntry  // the content last read, by path
	lists   map[string]dirList     // guarded trees' directories as last listed
	links   map[string]indexLinks  // the submodules last read, by index path
	handles map[string]*os.File    // guardDir: the directory, to find it wherever it is moved
	before  map[*proc][]guardState // the state each running command started from
	memo    map[string]string      // during one look: a directory's broken way ("" when whole)
	ids     map[string][2]uint64   // the handles' identities
}

// dirList is a directory's entries when it had this lstat.
type dirList struct {
	stat  guardEntry
	names []string
}

// indexLinks are the submodules an index recorded when it had this lstat.
type indexLinks struct {
	stat  guardEntry
	paths []string
}

func newSandboxGuard(paths []guardedPath, writable func(string) bool) *sandboxGuard {
	paths = slices.Clone(paths)
	slices.SortStableFunc(paths, func(a, b guardedPath) int { return strings.Compare(a.Path, b.Path) })
	paths = slices.CompactFunc(paths, func(a, b guardedPath) bool { return a.Path == b.Path })
	return &sandboxGuard{paths: paths, writable: writable, cache: map[string]guardEntry{}, lists: map[string]dirList{}, links: map[string]indexLinks{},
		handles: map[string]*os.File{}, before: map[*proc][]guardState{}, ids: map[string][2]uint64{}}
}

// begin notes the state a command is about to start from; track ties it
// to the command once started.
func (g *sandboxGuard) begin() []guardState {
	if g == nil || len(g.paths) == 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.look()
	for i, gp := range g.paths {
		if gp.Kind == guardDir {
			g.hold(gp.Path, st[i].entry)
		}
	}
	return st
}

func (g *sandboxGuard) track(p *proc, st []guardState) {
	if st == nil {
		return
	}
	g.mu.Lock()
	g.before[p] = st
	g.mu.Unlock()
}

// end compares the state after command p with the one it started from,
// puts back what it changed, and says what that was ("" for nothing).
// Call it once nothing of the command runs any more.
func (g *sandboxGuard) end(p *proc) string {
	if g == nil || len(g.paths) == 0 {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	before, ok := g.before[p]
	delete(g.before, p)
	if !ok {
		return ""
	}
	var notes []string
	g.memo = map[string]string{}
	for i, gp := range g.paths {
		// Each is looked at afresh: putting a directory back puts back
		// what is in it too.
		now := g.state(gp)
		if g.unchanged(gp, before[i], now) {
			continue
		}
		notes = append(notes, g.undo(gp, before[i], now)...)
		g.memo = map[string]string{}
	}
	g.memo = nil
	if len(notes) == 0 {
		return ""
	}
	return "[sandbox: this command changed what programs outside the sandbox read or run (git, validators, hooks, MCP servers, the permission rules); zot undid it:\n- " +
		strings.Join(notes, "\n- ") + "\nmake such changes yourself, outside zot, if they are wanted]"
}

// close releases the directory handles.
func (g *sandboxGuard) close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for p, f := range g.handles {
		f.Close()
		delete(g.handles, p)
	}
}

// look is the state of every guarded path.
func (g *sandboxGuard) look() []guardState {
	g.memo = map[string]string{}
	defer func() { g.memo = nil }()
	out := make([]guardState, len(g.paths))
	for i, gp := range g.paths {
		out[i] = g.state(gp)
	}
	return out
}

// hold keeps a handle on the directory at path while it is the one e
// describes, to find it again after a rename.
func (g *sandboxGuard) hold(path string, e guardEntry) {
	id := [2]uint64{e.dev, e.ino}
	if f := g.handles[path]; f != nil && g.ids[path] == id {
		return
	} else if f != nil {
		f.Close()
		delete(g.handles, path)
	}
	if e.typ != 'd' {
		return
	}
	if f, err := openDirHandle(path); err == nil {
		g.handles[path], g.ids[path] = f, id
	}
}

// state reads one guarded path.
func (g *sandboxGuard) state(gp guardedPath) guardState {
	var s guardState
	if s.broken = g.brokenWay(filepath.Dir(gp.Path)); s.broken != "" {
		return s
	}
	if g.memo != nil && g.memo[filepath.Dir(gp.Path)] == guardAbsent {
		return s // in a directory that is not there
	}
	s.entry = g.entry(gp.Path, gp.Kind != guardDir && gp.Kind != guardIsDir)
	switch gp.Kind {
	case guardTree:
		if s.entry.typ == 'd' {
			s.tree = map[string]guardEntry{}
			g.walk(gp.Path, "", s.entry, s.tree)
		}
	case guardIndex:
		s.links = g.submodules(gp, s.entry)
	}
	return s
}

// walk adds the entries beneath dir (whose lstat is st) to tree, up to
// guardTreeLimit. A directory is listed again only when its lstat
// changed: an entry made, removed or renamed in it changes its times.
func (g *sandboxGuard) walk(dir, rel string, st guardEntry, tree map[string]guardEntry) {
	l, ok := g.lists[dir]
	if !ok || !l.stat.sameLstat(st) {
		names, err := readDirNames(dir)
		if err != nil {
			return
		}
		l = dirList{st, names}
		g.lists[dir] = l
	}
	names := l.names
	for _, n := range names {
		if len(tree) >= guardTreeLimit {
			return
		}
		p, r := filepath.Join(dir, n), filepath.Join(rel, n)
		if c, ok := g.cache[p]; ok && strings.HasSuffix(n, ".sample") {
			// Git runs no hook by that name: its content as first read is
			// enough to put it back (a rename to pre-commit is a new
			// entry, and changes the directory's times).
			tree[r] = c
			continue
		}
		e := g.entry(p, true)
		tree[r] = e
		if e.typ == 'd' {
			g.walk(p, r, e, tree)
		}
	}
}

// submodules reads, for a guarded index, the .git of each submodule it
// records. The index is parsed again only when its lstat changed.
func (g *sandboxGuard) submodules(gp guardedPath, index guardEntry) map[string]guardEntry {
	if index.typ != 'f' {
		return nil
	}
	known, ok := g.links[gp.Path]
	if !ok || !known.stat.sameLstat(index) {
		known = indexLinks{stat: index}
		if data, err := os.ReadFile(gp.Path); err == nil {
			known.paths, _ = indexGitlinks(data, gitHashLen(gitConfigBeside(gp.Path)))
		}
		g.links[gp.Path] = known
	}
	if len(known.paths) == 0 {
		return nil
	}
	out := map[string]guardEntry{}
	for _, l := range known.paths {
		p := filepath.Join(gp.Root, filepath.FromSlash(l), ".git")
		out[l] = g.entry(p, true)
	}
	return out
}

// gitConfigBeside is the config of the common directory of the git
// directory an index lies in.
func gitConfigBeside(index string) string {
	dir := filepath.Dir(index)
	if c := gitPointer(filepath.Join(dir, "commondir"), "", dir); c != "" {
		dir = c
	}
	return filepath.Join(dir, "config")
}

// entry reads one path without following a link at its end; with data,
// a file's content comes along (from the cache while its lstat is the
// same).
func (g *sandboxGuard) entry(path string, data bool) guardEntry {
	st, err := os.Lstat(path)
	if err != nil {
		return guardEntry{}
	}
	e := guardEntry{perm: st.Mode().Perm(), size: st.Size(), mtime: st.ModTime().UnixNano()}
	e.dev, e.ino, e.ctime = statIDs(st)
	switch m := st.Mode(); {
	case m.IsDir():
		e.typ = 'd'
	case m.IsRegular():
		e.typ = 'f'
	case m&fs.ModeSymlink != 0:
		e.typ = 'l'
	default:
		e.typ = 'o'
	}
	if !data || e.typ != 'f' && e.typ != 'l' {
		return e
	}
	if c, ok := g.cache[path]; ok && c.sameLstat(e) {
		return c
	}
	if e.typ == 'l' {
		target, err := os.Readlink(path)
		e.data, e.whole = []byte(target), err == nil
	} else {
		e.data, e.whole = readGuarded(path, e.size)
	}
	g.cache[path] = e
	return e
}

// readGuarded reads a regular file whole, if it is not too large, without
// following a link put in its place meanwhile nor waiting on a FIFO.
func readGuarded(path string, size int64) ([]byte, bool) {
	if size > guardKeepLimit {
		return nil, false
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(f, guardKeepLimit+1))
	if err != nil || len(b) > guardKeepLimit {
		return nil, false
	}
	return b, true
}

// guardAbsent marks, in the memo of brokenWay, a directory that is not
// there (nor anything beneath it).
const guardAbsent = "\x00"

// brokenWay is the first directory from the writable set down to dir
// that is not a directory any more (a link, a file), or "".
func (g *sandboxGuard) brokenWay(dir string) string {
	if !g.writable(dir) {
		return ""
	}
	if b, ok := g.memo[dir]; ok && g.memo != nil {
		if b == guardAbsent {
			return ""
		}
		return b
	}
	b := ""
	if parent := filepath.Dir(dir); parent != dir {
		b = g.brokenWay(parent)
	}
	mark := b
	switch {
	case b != "":
	case g.memo != nil && g.memo[filepath.Dir(dir)] == guardAbsent:
		mark = guardAbsent
	default:
		if st, err := os.Lstat(dir); err != nil {
			mark = guardAbsent
		} else if !st.IsDir() {
			b, mark = dir, dir
		}
	}
	if g.memo != nil {
		g.memo[dir] = mark
	}
	return b
}

// unchanged says whether a guarded path is as a command found it, as far
// as what outside programs do with it.
func (g *sandboxGuard) unchanged(gp guardedPath, was, now guardState) bool {
	if now.broken != "" && was.broken == "" {
		return false
	}
	switch gp.Kind {
	case guardHead:
		if now.entry.same(was.entry) {
			return true
		}
		n := gitHashLen(gitConfigBeside(gp.Path))
		return gitHeadOK(now.entry, n) || !gitHeadOK(was.entry, n)
	case guardIsDir:
		return now.entry.typ == 'd' || was.entry.typ != 'd'
	case guardTodo:
		if now.entry.typ == 0 || now.entry.same(was.entry) {
			return true
		}
		added, ok := rebaseExecsAdded(was.entry, now.entry)
		return ok && !added
	case guardIndex:
		for l, e := range now.links {
			if e.typ != 0 && !e.same(was.links[l]) {
				return false
			}
		}
		return true
	case guardTree:
		if !now.entry.same(was.entry) || len(now.tree) != len(was.tree) {
			return false
		}
		for r, e := range now.tree {
			if w, ok := was.tree[r]; !ok || !e.same(w) {
				return false
			}
		}
		return true
	}
	return now.entry.same(was.entry)
}

// rebaseExecsAdded says whether the rebase todo now holds an exec line
// that was not there before; ok is false when either cannot be read
// whole (a change then counts as one).
func rebaseExecsAdded(was, now guardEntry) (added, ok bool) {
	if now.typ != 'f' || !now.whole || was.typ != 0 && (was.typ != 'f' || !was.whole) {
		return false, false
	}
	before := rebaseExecs(was.data)
	for _, x := range rebaseExecs(now.data) {
		if !slices.Contains(before, x) {
			return true, true
		}
	}
	return false, true
}

// rebaseExecs are the lines of a rebase todo that git runs as commands:
// `exec` or `x` first on the line, after blanks (git's own parse is
// narrower: it splits on ASCII blanks only).
func rebaseExecs(todo []byte) []string {
	var out []string
	for _, line := range strings.Split(string(todo), "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "exec" || f[0] == "x") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// gitHeadOK says whether a HEAD as read is one git accepts.
func gitHeadOK(e guardEntry, hashLen int) bool {
	switch e.typ {
	case 'f':
		return e.whole && validGitHead(e.data, hashLen)
	case 'l':
		return strings.HasPrefix(string(e.data), "refs/")
	}
	return false
}

// undo puts one guarded path back as it was, and says what it did.
func (g *sandboxGuard) undo(gp guardedPath, was, now guardState) []string {
	var notes []string
	note := func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
	if now.broken != "" {
		if to, err := g.moveAside(now.broken); err == nil {
			note("%s, on the way to %s, was replaced by something that is not a directory: moved aside to %s", now.broken, gp.Path, filepath.Base(to))
		} else {
			return append(notes, fmt.Sprintf("%s, on the way to %s, was replaced by something that is not a directory, and zot could not move it aside: %v", now.broken, gp.Path, err))
		}
		g.memo = map[string]string{}
		now = g.state(gp)
	}
	switch gp.Kind {
	case guardIndex:
		for _, l := range sortedKeys(now.links) {
			e := now.links[l]
			if e.typ == 0 || e.same(was.links[l]) {
				continue
			}
			p := filepath.Join(gp.Root, filepath.FromSlash(l), ".git")
			to, err := g.moveAside(p)
			if err != nil {
				note("%s: git's index records %s as a submodule, and its repository %s is new or changed; zot could not move it aside: %v", gp.Path, l, p, err)
				continue
			}
			note("git's index records %s as a submodule, and its repository (%s) is new or changed: git would run what its config and hooks say; moved aside to %s", l, p, filepath.Base(to))
			if w := was.links[l]; w.typ == 'f' && w.whole {
				if err := writeFileAtomic(p, w.data, w.perm); err == nil {
					note("%s put back as it was", p)
				}
			}
		}
		return notes
	case guardDir:
		return append(notes, g.undoDir(gp, was.entry, now.entry)...)
	case guardTree:
		if was.entry.typ == 'd' && now.entry.same(was.entry) {
			return append(notes, g.undoTree(gp.Path, was.tree, now.tree)...)
		}
	}
	what := map[byte]string{0: "created", 'd': "changed", 'f': "changed", 'l': "changed", 'o': "changed"}[was.entry.typ]
	if now.entry.typ == 0 {
		what = "removed"
	}
	switch gp.Kind {
	case guardHead:
		what = "made into something git does not take for a HEAD"
	case guardTodo:
		what = "given a command to run (an exec line) at your next `git rebase --continue`"
	case guardIsDir:
		what = "removed: without it git takes its directory for none and looks further, at the work tree as a repository of its own"
		was.entry = guardEntry{typ: 'd', perm: 0o755}
	}
	aside := ""
	if now.entry.typ != 0 {
		to, err := g.moveAside(gp.Path)
		if err != nil {
			return append(notes, fmt.Sprintf("%s was %s, and zot could not move it aside: %v", gp.Path, what, err))
		}
		aside = "; the command's version is moved aside to " + filepath.Base(to)
	}
	if err := g.restore(gp.Path, was); err != nil {
		note("%s was %s; zot could not put it back: %v%s", gp.Path, what, err, aside)
	} else if gp.Kind == guardIsDir {
		note("%s was %s; an empty one is in its place%s", gp.Path, what, aside)
	} else if was.entry.typ != 0 {
		note("%s was %s: put back as it was%s", gp.Path, what, aside)
	} else {
		note("%s was %s%s", gp.Path, what, aside)
	}
	return notes
}

// undoTree puts back the entries of a guarded directory that is still
// the same one: what is new or changed in it is moved aside (hooks/
// pre-commit.zot-refused-…, which git does not run), what is gone or
// changed is put back.
func (g *sandboxGuard) undoTree(root string, was, now map[string]guardEntry) []string {
	var notes []string
	var aside []string
	for _, r := range sortedKeys(now) {
		if w, ok := was[r]; ok && w.same(now[r]) || slices.ContainsFunc(aside, func(a string) bool { return withinDir(r, a) }) {
			continue
		}
		p := filepath.Join(root, r)
		to, err := g.moveAside(p)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s is new or changed, and zot could not move it aside: %v", p, err))
			continue
		}
		aside = append(aside, r)
		notes = append(notes, fmt.Sprintf("%s is new or changed: moved aside to %s", p, filepath.Base(to)))
	}
	for _, r := range sortedKeys(was) {
		if n, ok := now[r]; ok && n.same(was[r]) && !slices.ContainsFunc(aside, func(a string) bool { return withinDir(r, a) }) {
			continue
		}
		p := filepath.Join(root, r)
		if err := restoreEntry(p, was[r]); err != nil {
			notes = append(notes, fmt.Sprintf("%s was removed or changed; zot could not put it back: %v", p, err))
		} else if _, ok := now[r]; !ok {
			notes = append(notes, fmt.Sprintf("%s was removed: put back", p))
		}
	}
	return notes
}

// undoDir puts a guarded directory back: the one that was there, found
// wherever it was moved (through the handle held on it), else an empty
// one.
func (g *sandboxGuard) undoDir(gp guardedPath, was, now guardEntry) []string {
	var notes []string
	aside := ""
	if now.typ != 0 {
		to, err := g.moveAside(gp.Path)
		if err != nil {
			return []string{fmt.Sprintf("%s was replaced or created, and zot could not move it aside: %v", gp.Path, err)}
		}
		aside = "; what was there instead is moved aside to " + filepath.Base(to)
	}
	if was.typ == 0 {
		return append(notes, fmt.Sprintf("%s was created%s", gp.Path, aside))
	}
	if f := g.handles[gp.Path]; f != nil {
		if at := handlePath(f); at != "" && at != gp.Path && g.writable(at) && g.brokenWay(filepath.Dir(at)) == "" {
			if e := g.entry(at, false); e.typ == 'd' && e.dev == was.dev && e.ino == was.ino {
				if err := os.Rename(at, gp.Path); err == nil {
					return append(notes, fmt.Sprintf("%s was moved to %s: moved back%s", gp.Path, at, aside))
				}
			}
		}
	}
	if err := os.MkdirAll(gp.Path, was.perm|0o700); err != nil {
		return append(notes, fmt.Sprintf("%s was removed or moved, and zot could not make it again: %v%s", gp.Path, err, aside))
	}
	return append(notes, fmt.Sprintf("%s was removed or moved where zot cannot find it: an empty one is in its place, with what zot guards in it put back%s", gp.Path, aside))
}

// restore puts back what a guarded path held: a file's content, a link,
// a directory tree; nothing for a path that did not exist.
func (g *sandboxGuard) restore(path string, was guardState) error {
	e := was.entry
	if e.typ == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := restoreEntry(path, e); err != nil {
		return err
	}
	for _, r := range sortedKeys(was.tree) {
		if err := restoreEntry(filepath.Join(path, r), was.tree[r]); err != nil {
			return err
		}
	}
	return nil
}

func restoreEntry(path string, e guardEntry) error {
	switch {
	case e.typ == 'd':
		return os.Mkdir(path, e.perm|0o700)
	case e.typ == 'f' && e.whole:
		return writeFileAtomic(path, e.data, e.perm)
	case e.typ == 'l' && e.whole:
		return os.Symlink(string(e.data), path)
	case e.typ == 'f':
		return fmt.Errorf("larger than the %d bytes zot keeps of a file", guardKeepLimit)
	}
	return errors.New("not a file, directory or link")
}

// moveAside renames path to a new name beside it, NAME.zot-refused-XXXXXX,
// after making the way to it whole again.
func (g *sandboxGuard) moveAside(path string) (string, error) {
	if b := g.brokenWay(filepath.Dir(path)); b != "" {
		if _, err := g.moveAside(b); err != nil {
			return "", err
		}
	}
	for range 10 {
		var r [3]byte
		rand.Read(r[:])
		to := path + ".zot-refused-" + hex.EncodeToString(r[:])
		if _, err := os.Lstat(to); err == nil {
			continue
		}
		return to, os.Rename(path, to)
	}
	return "", errors.New("no free name beside it")
}

// readDirNames lists a directory's entries by name, sorted, without
// following anything.
func readDirNames(dir string) ([]string, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// guardCovers says whether real (absolute, symlinks resolved) lies in a
// guarded path: write and edit refuse it.
func guardCovers(paths []guardedPath, real string) string {
	for _, gp := range paths {
		if withinDir(real, gp.Path) {
			return gp.Path
		}
	}
	return ""
}
