//go:build !linux

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Elsewhere (macOS, the BSDs) Go's syscall package has no openat: the
// walk goes by name, one component at a time with Lstat, reading each
// symlink and walking its target again, and checking each directory it
// enters against the hidden ones by identity. The final open refuses a
// symlink (O_NOFOLLOW) and must find the file the walk found, and a
// write's temp file is made in the directory the walk judged. What this
// cannot catch is a directory on the way swapped for a symlink between
// two steps of the walk: docs/security.md says so.

// openedParent is where the walk ended: the directory that holds the
// path, by name, and what is in it; see tools_open_linux.go.
type openedParent struct {
	dirPath string
	name    string
	missing []string
	found   bool
	fi      fs.FileInfo
}

func (at *openedParent) close() {}

func (at *openedParent) info() fs.FileInfo { return at.fi }

// walkPath resolves abs by r; see tools_open_linux.go.
func walkPath(abs string, r *pathRules) (*openedParent, error) {
	var hidden []fs.FileInfo
	for _, h := range r.hidden {
		if fi, err := os.Stat(h); err == nil {
			hidden = append(hidden, fi)
		}
	}
	hops, steps := 0, 0
	for {
		dirPath, comps := "/", splitPath(abs)
		next := ""
		for i := 0; i < len(comps) && next == ""; i++ {
			name, rest := comps[i], comps[i+1:]
			if steps++; steps > 4096 {
				return nil, &fs.PathError{Op: "resolve", Path: abs, Err: syscall.ELOOP}
			}
			if dot, again := dotStep(name, rest, dirPath); dot {
				next = again
				continue
			}
			at := filepath.Join(dirPath, name)
			fi, err := os.Lstat(at)
			if os.IsNotExist(err) && !hasDots(rest) {
				return &openedParent{dirPath: dirPath, name: name, missing: comps[i:]}, nil
			}
			if err != nil {
				return nil, err
			}
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				target, err := os.Readlink(at)
				if hops++; err == nil && hops > maxSymlinkHops {
					err = &fs.PathError{Op: "readlink", Path: at, Err: syscall.ELOOP}
				}
				if err != nil {
					return nil, err
				}
				if !strings.HasPrefix(target, "/") {
					target = dirPath + "/" + target
				}
				next = rawJoin(target, rest)
			case fi.IsDir():
				for _, h := range hidden {
					if os.SameFile(fi, h) {
						return nil, hiddenError{at}
					}
				}
				if len(rest) == 0 {
					return &openedParent{dirPath: dirPath, name: name, found: true, fi: fi}, nil
				}
				dirPath = at
			default:
				if len(rest) > 0 {
					return nil, &fs.PathError{Op: "open", Path: filepath.Join(at, rest[0]), Err: syscall.ENOTDIR}
				}
				return &openedParent{dirPath: dirPath, name: name, found: true, fi: fi}, nil
			}
		}
		if next == "" {
			fi, err := os.Stat("/")
			if err != nil {
				return nil, err
			}
			return &openedParent{dirPath: "/", found: true, fi: fi}, nil
		}
		abs = next
	}
}

// openExisting opens the regular file the walk found, refusing a symlink
// in its place, and makes sure it is that file.
func (at *openedParent) openExisting() (*os.File, error) {
	f, err := os.OpenFile(at.real(), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !os.SameFile(fi, at.fi) {
		f.Close()
		return nil, errChanged
	}
	return f, nil
}

// makeParents creates the missing directories of a write (0755).
func (at *openedParent) makeParents() error {
	for len(at.missing) > 1 {
		dir := filepath.Join(at.dirPath, at.missing[0])
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			return err
		}
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		at.dirPath, at.missing = dir, at.missing[1:]
	}
	if len(at.missing) == 1 {
		at.name, at.missing = at.missing[0], nil
	}
	return nil
}

// writeAtomic writes data beside name and renames it over name.
func (at *openedParent) writeAtomic(data []byte, mode fs.FileMode, owner *fileOwner) error {
	sweepTemps(at.dirPath)
	tmp := filepath.Join(at.dirPath, tempName(at.name))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	err = placeTemp(f, writeAll(data), mode, owner,
		func() error { return os.Rename(tmp, at.real()) },
		func() error { return os.Remove(tmp) })
	if err != nil {
		return err
	}
	if d, err := os.Open(at.dirPath); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// openedDir is a directory a search tool opened (tools_search.go), by
// name; see tools_open_linux.go. Here each step is checked by identity
// against what the step before saw, and a final open refuses a symlink.
type openedDir struct {
	path   string
	fi     fs.FileInfo
	hidden []fs.FileInfo
}

// openDirectory opens the directory the walk found, for listing.
func (at *openedParent) openDirectory(hidden []string) (*openedDir, error) {
	d := &openedDir{path: at.real(), fi: at.fi}
	for _, h := range hidden {
		if fi, err := os.Stat(h); err == nil {
			d.hidden = append(d.hidden, fi)
		}
	}
	return d, nil
}

func (d *openedDir) close() {}

// names lists the directory, in name order: at most max names, more
// saying there were others.
func (d *openedDir) names(max int) (names []string, more bool, err error) {
	f, err := os.OpenFile(d.path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !os.SameFile(fi, d.fi) {
		return nil, false, errChanged
	}
	for {
		batch, err := f.Readdirnames(1024)
		names = append(names, batch...)
		if len(names) > max {
			names, more = names[:max], true
			break
		}
		if err != nil || len(batch) == 0 {
			break
		}
	}
	sort.Strings(names)
	return names, more, nil
}

// stat describes what is under name, a symlink as a symlink.
func (d *openedDir) stat(name string) (fs.FileInfo, error) {
	return os.Lstat(filepath.Join(d.path, name))
}

// openDir opens the directory under name, which must be the one stat
// described; a hidden one is refused (hiddenError).
func (d *openedDir) openDir(name string, want fs.FileInfo) (*openedDir, error) {
	at := filepath.Join(d.path, name)
	fi, err := os.Lstat(at)
	if err != nil {
		return nil, err
	}
	if !os.SameFile(fi, want) || !fi.IsDir() {
		return nil, errChanged
	}
	for _, h := range d.hidden {
		if os.SameFile(fi, h) {
			return nil, hiddenError{at}
		}
	}
	return &openedDir{path: at, fi: fi, hidden: d.hidden}, nil
}

// openFile opens the regular file under name, which must be the one stat
// described, for reading.
func (d *openedDir) openFile(name string, want fs.FileInfo) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(d.path, name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !os.SameFile(fi, want) {
		f.Close()
		return nil, errChanged
	}
	return f, nil
}
