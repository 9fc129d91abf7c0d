package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The file tools open what they checked. A path from the model (read,
// write, edit, a prompt's @path) or from a repository (AGENTS.md) is
// resolved one component at a time from an opened directory, and the
// kernel never follows a symlink on the way: a symlink is read, and its
// target resolved again by the same rules. The checks — the jail, the
// sandbox's hidden and writable sets, a project's root — judge the path
// the walk took, and the tool reads or writes the file the walk opened,
// by descriptor: a directory swapped for a symlink between the check and
// the use changes nothing. Writes go to a temp file created in the opened
// parent directory and renamed there. How the walk is done is the
// system's (tools_open_linux.go: openat2, else openat with O_NOFOLLOW per
// component; tools_open_other.go: by name, with the final open refusing
// a symlink).

// pathRules are what a path must satisfy to be opened.
type pathRules struct {
	// root, when not "", is the directory (absolute, symlinks resolved)
	// the path must lie beneath, after every symlink: the jail, a project.
	root string
	// hidden are directories the walk never enters, beneath root or not,
	// compared by identity (device and inode), not by name: $ZOT_HOME.
	hidden []string
	// check judges the path the walk took (the sandbox's CheckRead or
	// CheckWrite); nil allows it.
	check func(real string) error
	// outside is the error for a path that leaves root.
	outside func(p string) error
	// fast are directories known to hold nothing hidden, beneath which a
	// path without symlinks may be opened in one step (openat2).
	fast []string
}

// allows says whether the walk may end at real (absolute, the path it
// took), naming p, the path as given, in the refusal.
func (r *pathRules) allows(p, real string) error {
	if r.root != "" && !withinDir(real, r.root) {
		if r.outside != nil {
			return r.outside(p)
		}
		return fmt.Errorf("%s is outside %s", p, r.root)
	}
	if r.check != nil {
		if err := r.check(real); err != nil {
			return fmt.Errorf("path %s: %w", p, err)
		}
	}
	return nil
}

// withinDir reports whether path is dir or lies beneath it; both are clean
// and absolute.
func withinDir(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// maxSymlinkHops bounds the symlinks one path may go through, as the
// kernel's ELOOP does.
const maxSymlinkHops = 40

// toolRules are the rules of the jail and the sandbox sb (nil: none) for
// a path the model names, read (write false) or written.
func (e *ToolEnv) toolRules(sb CommandSandbox, write bool) pathRules {
	var r pathRules
	cwd, err := filepath.EvalSymlinks(e.Cwd)
	if err != nil {
		cwd = filepath.Clean(e.Cwd)
	}
	if e.Jailed() {
		r.root = cwd
		r.outside = func(p string) error {
			hint := ""
			if e.JailHint != "" {
				hint = "; " + e.JailHint
			}
			return fmt.Errorf("path %s is outside the working directory (the jail is on%s)", p, hint)
		}
	}
	if sb != nil {
		r.hidden = sb.Hidden()
		r.check = sb.CheckRead
		if write {
			r.check = sb.CheckWrite
		}
	}
	if !r.hides(cwd) {
		r.fast = []string{cwd}
	}
	return r
}

// hides says whether a hidden directory lies beneath dir (or is it).
func (r *pathRules) hides(dir string) bool {
	for _, h := range r.hidden {
		if withinDir(h, dir) {
			return true
		}
	}
	return false
}

// absPath is a tool's path argument made absolute against cwd, cleaned
// the way the model reads it: "a/../b" is "b", whatever a is.
func absPath(cwd, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// openRead opens the file a read tool names, for reading: the jail and
// the sandbox judge where the walk ended, and only a regular file is
// opened. For anything else (a directory, a FIFO, a device) it returns
// nil, its FileInfo and no error: the caller says what it is. A missing
// file is an error satisfying errors.Is(err, fs.ErrNotExist).
//
// The jail lets read reach the session's spill files, which a bash result
// told the model to read: the file opened must be one of them itself.
func (e *ToolEnv) openRead(ctx context.Context, p string) (*os.File, fs.FileInfo, error) {
	r := e.toolRules(e.sandbox(ctx), false)
	f, info, err := openChecked(absPath(e.Cwd, p), p, &r)
	if err == nil || r.root == "" || !filepath.IsAbs(p) {
		return f, info, err
	}
	r.root, r.outside = "", nil
	sf, sinfo, serr := openChecked(filepath.Clean(p), p, &r)
	if serr == nil && sf != nil && e.isSpill(sinfo) {
		return sf, sinfo, nil
	}
	if sf != nil {
		sf.Close()
	}
	return f, info, err
}

// OpenProjectFile opens a file of the project in root — a context file,
// a template's body — for reading: regular files only, never beneath a
// hidden directory, and never outside root, whatever symlinks say.
func OpenProjectFile(root, path string, hidden []string) (*os.File, fs.FileInfo, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, nil, err
	}
	r := pathRules{root: real, hidden: hidden}
	if !r.hides(real) {
		r.fast = []string{real}
	}
	return openChecked(absPath(root, path), path, &r)
}

// writeTarget is where a write or an edit goes: the parent directory,
// opened, and the file in it (Info is nil when it does not exist yet).
// Close releases it.
type writeTarget struct {
	Path string      // as the model gave it, for messages
	Real string      // where the walk ended
	Info fs.FileInfo // the existing file; nil when there is none
	at   openedParent
}

// openWrite resolves a path write or edit is about to change: the jail
// and the sandbox judge where the walk ended — a missing file's parent
// directories included, which create makes. The sandbox is the call's
// (ctx: its decision's confinement).
func (e *ToolEnv) openWrite(ctx context.Context, p string) (*writeTarget, error) {
	r := e.toolRules(e.sandbox(ctx), true)
	return openForWrite(absPath(e.Cwd, p), p, &r)
}

func (w *writeTarget) Close() { w.at.close() }

// ReadAll reads the existing file, at most limit bytes: the file the walk
// found, not whatever now has its name.
func (w *writeTarget) ReadAll(limit int64) ([]byte, error) {
	f, err := w.at.openExisting()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readUntrustedOpen(f, w.Real, limit)
}

// Replace writes data over the existing file, whole or not at all,
// keeping what replaceFileAt keeps.
func (w *writeTarget) Replace(data []byte) error {
	return replaceFileAt(&w.at, data, w.Info)
}

// text is the existing file's text for an edit, at most limit bytes:
// the editor's, when it holds the files, else the file's on the disk.
func (w *writeTarget) text(ctx context.Context, env *ToolEnv, limit int64) (string, error) {
	read := env.editorRead()
	if read == nil {
		data, err := w.ReadAll(limit)
		return string(data), err
	}
	text, err := read(ctx, w.Real)
	if err != nil {
		return "", fmt.Errorf("the editor could not give its text: %w", err)
	}
	if int64(len(text)) > limit {
		return "", fmt.Errorf("the editor's text of it is %s, above the %s limit", sizeString(int64(len(text))), sizeString(limit))
	}
	return text, nil
}

// replace writes text over the existing file: through the editor when it
// holds the files, else as Replace does.
func (w *writeTarget) replace(ctx context.Context, env *ToolEnv, text string) error {
	if write := env.editorWrite(); write != nil {
		if err := write(ctx, w.Real, text); err != nil {
			return fmt.Errorf("the editor could not write it: %w", err)
		}
		return nil
	}
	return w.Replace([]byte(text))
}

// Create writes a new file with mode, making its missing parent
// directories (0755).
func (w *writeTarget) Create(data []byte, mode fs.FileMode) error {
	if err := w.at.makeParents(); err != nil {
		return fmt.Errorf("create parent directories: %w", err)
	}
	return w.at.writeAtomic(data, mode, nil)
}

// replaceFileAt writes data over the existing regular file that old
// describes, in the directory the walk opened, atomically, keeping its
// mode and, where the writer may set them, its owner and group: root keeps both, anyone keeps
// a group they belong to. A set-user-ID or set-group-ID bit whose owner or
// group could not be kept is dropped, as cp and install do, so replacing
// another user's setuid program never makes a setuid program of the
// writer's. A file with more than one hard link is refused: the rename
// would leave the other names with the old text, and writing in place
// could leave a half-written file (or change a shared store's copy).
func replaceFileAt(at *openedParent, data []byte, old fs.FileInfo) error {
	owner, mode, err := replacement(old)
	if err != nil {
		return err
	}
	return at.writeAtomic(data, mode, owner)
}

// real is where the walk ended, as a path.
func (at *openedParent) real() string {
	if len(at.missing) > 0 {
		return filepath.Join(append([]string{at.dirPath}, at.missing...)...)
	}
	return filepath.Join(at.dirPath, at.name)
}

// errChanged is an open that found another file than the walk did: the
// name was swapped in between.
var errChanged = errors.New("the file changed while it was being opened; try again")

// rawJoin is base/rest… without cleaning: ".." in a symlink's target is
// the parent of where the walk really is, which only the walk knows.
// dotStep is a walk's step over name when it is "." or "..", at dirPath
// with rest after it: again is the path to walk afresh from the root ("" to
// go on with rest). A last "." walks dirPath again by its own name, so
// that what ends it is judged as a name; ".." goes up by the path walked,
// not by what a link there points at.
func dotStep(name string, rest []string, dirPath string) (dot bool, again string) {
	switch name {
	case ".":
		if len(rest) == 0 {
			again = filepath.Dir(dirPath) + "/" + filepath.Base(dirPath)
		}
		return true, again
	case "..":
		return true, rawJoin(filepath.Dir(dirPath), rest)
	}
	return false, ""
}

func rawJoin(base string, rest []string) string {
	if len(rest) == 0 {
		return base
	}
	return strings.TrimSuffix(base, "/") + "/" + strings.Join(rest, "/")
}

func hasDots(comps []string) bool {
	for _, c := range comps {
		if c == "." || c == ".." {
			return true
		}
	}
	return false
}

// hiddenError is a walk that reached a hidden directory.
type hiddenError struct{ at string }

func (e hiddenError) Error() string { return e.at + " is a directory the file tools do not enter" }

// openChecked opens abs (p as given) for reading, if r allows where it
// leads and it is a regular file; see ToolEnv.openRead.
func openChecked(abs, p string, r *pathRules) (*os.File, fs.FileInfo, error) {
	for tries := 0; ; tries++ {
		at, err := walkPath(abs, r)
		if err != nil {
			return nil, nil, walkError(p, err, r)
		}
		if err := r.allows(p, at.real()); err != nil {
			at.close()
			return nil, nil, err
		}
		if !at.found {
			at.close()
			return nil, nil, &fs.PathError{Op: "open", Path: at.real(), Err: fs.ErrNotExist}
		}
		if info := at.info(); !info.Mode().IsRegular() {
			at.close()
			return nil, info, nil
		}
		f, err := at.openExisting()
		at.close()
		if errors.Is(err, errChanged) && tries < 3 {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		return f, info, nil
	}
}

// openForWrite resolves abs (p as given) for write and edit; see
// ToolEnv.openWrite.
func openForWrite(abs, p string, r *pathRules) (*writeTarget, error) {
	at, err := walkPath(abs, r)
	if err != nil {
		return nil, walkError(p, err, r)
	}
	w := &writeTarget{Path: p, Real: at.real(), at: *at}
	if err := r.allows(p, w.Real); err != nil {
		at.close()
		return nil, err
	}
	if at.found {
		w.Info = at.info()
	}
	return w, nil
}

// walkError words an error of the walk for the tool's result: a hidden
// directory as the sandbox says it.
func walkError(p string, err error, r *pathRules) error {
	var h hiddenError
	if errors.As(err, &h) {
		if r.check != nil {
			if cerr := r.check(h.at); cerr != nil {
				return fmt.Errorf("path %s: %w", p, cerr)
			}
		}
		return fmt.Errorf("path %s: %w", p, err)
	}
	return fmt.Errorf("resolve path %s: %w", p, err)
}

// ownedByUser says whether a file belongs to the user zot runs as.
func ownedByUser(st fs.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Getuid()
}

// splitPath lists the components of an absolute path.
func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}
