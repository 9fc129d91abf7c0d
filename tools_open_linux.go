//go:build linux

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// On Linux the walk is done by descriptor. Where the path has no symlink
// and lies beneath a directory known to hold nothing hidden, openat2(2)
// opens its parent in one step, RESOLVE_BENEATH that directory with
// RESOLVE_NO_SYMLINKS and RESOLVE_NO_MAGICLINKS. Otherwise — a symlink on
// the way, a kernel before 5.6, an architecture zot has no number for —
// the walk opens "/" and then each component with openat(O_PATH |
// O_NOFOLLOW) from the one before, checking each directory it enters
// against the hidden ones by device and inode; a symlink is read
// (readlinkat) and its target walked again from the start.

const (
	oPath               = 0x200000 // O_PATH on every architecture Go runs Linux on
	resolveNoMagicLinks = 0x02
	resolveNoSymlinks   = 0x04
	resolveBeneath      = 0x08
	sysOpenat2          = 437 // amd64 and arm64
	atFdcwd             = -100
)

// openat2Gone turns true once the kernel (or a seccomp filter) has said
// it has no openat2: the walk is used from then on.
var openat2Gone atomic.Bool

// openat2 opens path beneath dir with resolve's restrictions; an error
// means "walk instead".
func openat2(dir int, path string, flags int, resolve uint64) (int, error) {
	if openat2Gone.Load() || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		return -1, syscall.ENOSYS
	}
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return -1, err
	}
	how := struct{ flags, mode, resolve uint64 }{uint64(flags | syscall.O_CLOEXEC), 0, resolve}
	fd, _, errno := syscall.Syscall6(sysOpenat2, uintptr(dir), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
	runtime.KeepAlive(p)
	switch errno {
	case 0:
		return int(fd), nil
	case syscall.ENOSYS, syscall.E2BIG:
		openat2Gone.Store(true)
	}
	return -1, errno
}

// openedParent is where the walk ended: the directory that holds the
// path, opened (an O_PATH handle), and what is in it under name. For a
// write, missing are the components beneath dir that do not exist yet,
// the last being the file.
type openedParent struct {
	dir     int
	dirPath string // the path the walk took to dir
	name    string
	missing []string
	found   bool
	st      syscall.Stat_t // of what is under name, when found
}

// info describes what the walk found.
func (at *openedParent) info() fs.FileInfo { return statInfo{at.name, at.st} }

func (at *openedParent) close() {
	if at.dir >= 0 {
		syscall.Close(at.dir)
		at.dir = -1
	}
}

// walkPath resolves abs (absolute, clean) by r, from opened directories,
// never letting the kernel follow a symlink. A path whose end does not
// exist is not an error: missing says what is not there (what a write
// makes), so that the rules can judge it first.
func walkPath(abs string, r *pathRules) (*openedParent, error) {
	hidden := fileIDs(r.hidden)
	hops, steps := 0, 0
	for {
		dir, dirPath, comps, err := walkStart(abs, r)
		if err != nil {
			return nil, err
		}
		next := ""
		for i := 0; i < len(comps) && next == ""; i++ {
			name, rest := comps[i], comps[i+1:]
			if steps++; steps > 4096 {
				syscall.Close(dir)
				return nil, &fs.PathError{Op: "resolve", Path: abs, Err: syscall.ELOOP}
			}
			if dot, again := dotStep(name, rest, dirPath); dot {
				next = again
				continue
			}
			at := filepath.Join(dirPath, name)
			fd, err := syscall.Openat(dir, name, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
			if err == syscall.ENOENT && !hasDots(rest) {
				return &openedParent{dir: dir, dirPath: dirPath, name: name, missing: comps[i:]}, nil
			}
			if err != nil {
				syscall.Close(dir)
				return nil, &fs.PathError{Op: "open", Path: at, Err: err}
			}
			var st syscall.Stat_t
			if err := syscall.Fstat(fd, &st); err != nil {
				syscall.Close(fd)
				syscall.Close(dir)
				return nil, &fs.PathError{Op: "stat", Path: at, Err: err}
			}
			switch st.Mode & syscall.S_IFMT {
			case syscall.S_IFLNK:
				target, err := readlinkFd(fd)
				syscall.Close(fd)
				if hops++; err == nil && hops > maxSymlinkHops {
					err = syscall.ELOOP
				}
				if err != nil {
					syscall.Close(dir)
					return nil, &fs.PathError{Op: "readlink", Path: at, Err: err}
				}
				if !strings.HasPrefix(target, "/") {
					target = dirPath + "/" + target
				}
				next = rawJoin(target, rest)
			case syscall.S_IFDIR:
				if hidden.has(&st) {
					syscall.Close(fd)
					syscall.Close(dir)
					return nil, hiddenError{at}
				}
				if len(rest) == 0 {
					syscall.Close(fd)
					return &openedParent{dir: dir, dirPath: dirPath, name: name, found: true, st: st}, nil
				}
				syscall.Close(dir)
				dir, dirPath = fd, at
			default:
				syscall.Close(fd)
				if len(rest) > 0 {
					syscall.Close(dir)
					return nil, &fs.PathError{Op: "open", Path: filepath.Join(at, rest[0]), Err: syscall.ENOTDIR}
				}
				return &openedParent{dir: dir, dirPath: dirPath, name: name, found: true, st: st}, nil
			}
		}
		if next == "" { // abs is "/"
			var st syscall.Stat_t
			syscall.Fstat(dir, &st)
			return &openedParent{dir: dir, dirPath: "/", name: "", found: true, st: st}, nil
		}
		syscall.Close(dir)
		abs = next
	}
}

// walkStart is where a walk of abs begins: its parent opened in one step
// by openat2 where it can be, else "/".
func walkStart(abs string, r *pathRules) (dir int, dirPath string, comps []string, err error) {
	if parent := filepath.Dir(abs); parent != abs && !hasDots(splitPath(abs)) {
		for _, root := range r.fast {
			if !withinDir(parent, root) {
				continue
			}
			rootFd, err := openat2(atFdcwd, root, oPath|syscall.O_DIRECTORY, resolveNoSymlinks|resolveNoMagicLinks)
			if err != nil {
				break
			}
			rel, _ := filepath.Rel(root, parent)
			fd, err := openat2(rootFd, rel, oPath|syscall.O_DIRECTORY, resolveBeneath|resolveNoSymlinks|resolveNoMagicLinks)
			syscall.Close(rootFd)
			if err == nil {
				return fd, parent, []string{filepath.Base(abs)}, nil
			}
			break
		}
	}
	fd, err := syscall.Open("/", oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", nil, &fs.PathError{Op: "open", Path: "/", Err: err}
	}
	return fd, "/", splitPath(abs), nil
}

// readlinkFd reads the target of the symlink fd is an O_PATH handle on.
func readlinkFd(fd int) (string, error) {
	empty := []byte{0}
	for size := 256; size <= 1<<16; size *= 4 {
		buf := make([]byte, size)
		n, _, errno := syscall.Syscall6(syscall.SYS_READLINKAT, uintptr(fd), uintptr(unsafe.Pointer(&empty[0])), uintptr(unsafe.Pointer(&buf[0])), uintptr(size), 0, 0)
		if errno != 0 {
			return "", errno
		}
		if int(n) < size {
			return string(buf[:n]), nil
		}
	}
	return "", syscall.ENAMETOOLONG
}

// fileID is a file's identity: device and inode.
type fileID struct{ dev, ino uint64 }

type fileIDSet []fileID

// fileIDs are the identities of paths that exist (symlinks followed).
func fileIDs(paths []string) fileIDSet {
	var out fileIDSet
	for _, p := range paths {
		var st syscall.Stat_t
		if syscall.Stat(p, &st) == nil {
			out = append(out, fileID{uint64(st.Dev), uint64(st.Ino)})
		}
	}
	return out
}

func (s fileIDSet) has(st *syscall.Stat_t) bool {
	for _, id := range s {
		if id.dev == uint64(st.Dev) && id.ino == uint64(st.Ino) {
			return true
		}
	}
	return false
}

// openExisting opens the regular file the walk found, for reading, and
// makes sure it is that file.
func (at *openedParent) openExisting() (*os.File, error) {
	fd, err := syscall.Openat(at.dir, at.name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: at.real(), Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Dev != at.st.Dev || st.Ino != at.st.Ino {
		syscall.Close(fd)
		return nil, errChanged
	}
	return os.NewFile(uintptr(fd), at.real()), nil
}

// makeParents creates the missing directories of a write (0755), each in
// the one before, and leaves dir at the last.
func (at *openedParent) makeParents() error {
	for len(at.missing) > 1 {
		name := at.missing[0]
		if err := syscall.Mkdirat(at.dir, name, 0o755); err != nil && err != syscall.EEXIST {
			return &fs.PathError{Op: "mkdir", Path: filepath.Join(at.dirPath, name), Err: err}
		}
		fd, err := syscall.Openat(at.dir, name, oPath|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != nil {
			return &fs.PathError{Op: "open", Path: filepath.Join(at.dirPath, name), Err: err}
		}
		syscall.Close(at.dir)
		at.dir, at.dirPath, at.missing = fd, filepath.Join(at.dirPath, name), at.missing[1:]
	}
	if len(at.missing) == 1 {
		at.name, at.missing = at.missing[0], nil
	}
	return nil
}

// writeAtomic writes data to a temp file created in the opened parent
// and renames it over name there, as writeAtomic does by path: whole or
// not at all, mode set, owner kept where owner says and the writer may.
func (at *openedParent) writeAtomic(data []byte, mode fs.FileMode, owner *fileOwner) (err error) {
	sweepTemps(at.dirPath)
	tmp := tempName(at.name)
	fd, err := syscall.Openat(at.dir, tmp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return &fs.PathError{Op: "create", Path: filepath.Join(at.dirPath, tmp), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(at.dirPath, tmp))
	err = placeTemp(f, writeAll(data), mode, owner, func() error {
		if err := syscall.Renameat(at.dir, tmp, at.dir, at.name); err != nil {
			return &fs.PathError{Op: "rename", Path: at.real(), Err: err}
		}
		return nil
	}, func() error { return syscall.Unlinkat(at.dir, tmp) })
	if err != nil {
		return err
	}
	// Durable once the directory is synced; a failure leaves a whole file.
	if d, err := syscall.Openat(at.dir, ".", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0); err == nil {
		syscall.Fsync(d)
		syscall.Close(d)
	}
	return nil
}

// statInfo is an fs.FileInfo of what the walk found, for what is not
// opened (a directory, a FIFO, a device) and for a file about to be
// replaced (Sys is its *syscall.Stat_t, as os gives).
type statInfo struct {
	name string
	st   syscall.Stat_t
}

func (s statInfo) Name() string       { return s.name }
func (s statInfo) Size() int64        { return s.st.Size }
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s statInfo) Sys() any           { return &s.st }

func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	}
	if s.st.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// openedDir is a directory a search tool opened (tools_search.go). What
// is in it is looked at and opened relative to it, by descriptor, never
// following a symlink: what a search meets cannot lead it out of the
// directory the walk to it judged, whatever is swapped meanwhile.
type openedDir struct {
	fd     int    // O_RDONLY | O_DIRECTORY
	path   string // the path walked to it
	hidden fileIDSet
}

// openDirectory opens the directory the walk found, for listing; hidden
// are the directories a search never enters below it.
func (at *openedParent) openDirectory(hidden []string) (*openedDir, error) {
	name := at.name
	if name == "" { // the walk ended at "/", which dir is
		name = "."
	}
	fd, err := syscall.Openat(at.dir, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: at.real(), Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Dev != at.st.Dev || st.Ino != at.st.Ino {
		syscall.Close(fd)
		return nil, errChanged
	}
	return &openedDir{fd: fd, path: at.real(), hidden: fileIDs(hidden)}, nil
}

func (d *openedDir) close() { syscall.Close(d.fd) }

// names lists the directory, in name order: at most max names, more
// saying there were others.
func (d *openedDir) names(max int) (names []string, more bool, err error) {
	buf := make([]byte, 32<<10)
	for {
		n, err := syscall.ReadDirent(d.fd, buf)
		if err != nil {
			return nil, false, &fs.PathError{Op: "readdir", Path: d.path, Err: err}
		}
		if n <= 0 {
			break
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
		if len(names) > max {
			names, more = names[:max], true
			break
		}
	}
	sort.Strings(names)
	return names, more, nil
}

// stat describes what is under name, a symlink as a symlink.
func (d *openedDir) stat(name string) (fs.FileInfo, error) {
	fd, err := syscall.Openat(d.fd, name, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(d.path, name), Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: filepath.Join(d.path, name), Err: err}
	}
	return statInfo{name, st}, nil
}

// openDir opens the directory under name, which must be the one stat
// described; a hidden one is refused (hiddenError).
func (d *openedDir) openDir(name string, want fs.FileInfo) (*openedDir, error) {
	at := filepath.Join(d.path, name)
	fd, err := syscall.Openat(d.fd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: at, Err: err}
	}
	var st syscall.Stat_t
	w, ok := want.Sys().(*syscall.Stat_t)
	if err := syscall.Fstat(fd, &st); err != nil || !ok || st.Dev != w.Dev || st.Ino != w.Ino {
		syscall.Close(fd)
		return nil, errChanged
	}
	if d.hidden.has(&st) {
		syscall.Close(fd)
		return nil, hiddenError{at}
	}
	return &openedDir{fd: fd, path: at, hidden: d.hidden}, nil
}

// openFile opens the regular file under name, which must be the one stat
// described, for reading.
func (d *openedDir) openFile(name string, want fs.FileInfo) (*os.File, error) {
	at := filepath.Join(d.path, name)
	fd, err := syscall.Openat(d.fd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: at, Err: err}
	}
	var st syscall.Stat_t
	w, ok := want.Sys().(*syscall.Stat_t)
	if err := syscall.Fstat(fd, &st); err != nil || !ok || st.Dev != w.Dev || st.Ino != w.Ino {
		syscall.Close(fd)
		return nil, errChanged
	}
	return os.NewFile(uintptr(fd), at), nil
}
