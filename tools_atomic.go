package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Whole or not at all: every file zot replaces — what write and edit
// write, what a restore brings back, zot's own files in $ZOT_HOME — goes
// through a temp file beside it, named by tempName and finished by
// placeTemp. A zot killed (-9, a power cut) between the two leaves the
// temp file behind; its name says it is zot's and which process made it,
// so a later run removes it once that process is gone (removeStaleTemp):
// the next write into the same directory, and the checkpoint walk of the
// project, which never records one.

// underLock runs fn holding an exclusive lock (flock) on lockPath, made
// 0600 when missing, in a directory made 0700 when missing: how zots
// running at once read, change and rewrite one of zot's own files and
// keep every change. The kernel drops the lock when the holder dies, even
// by kill -9.
func underLock(lockPath string, fn func() error) error {
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lockPath, err)
	}
	return fn()
}

// writeFileAtomic creates or replaces path with data so that a reader, or
// a crash, sees the old file or the new one, never a mix: the data goes to
// a temp file in the same directory (rename does not cross file systems),
// is synced, and is renamed over path. On failure the temp file is removed
// and path is untouched. The new file belongs to the writer; replaceFileAt
// keeps an existing file's owner.
func writeFileAtomic(path string, data []byte, mode fs.FileMode) error {
	return writeAtomic(path, data, mode, nil)
}

func writeAtomic(path string, data []byte, mode fs.FileMode, owner *fileOwner) (err error) {
	dir, base := filepath.Split(path)
	sweepTemps(filepath.Clean(dir))
	tmp := filepath.Join(dir, tempName(base))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	err = placeTemp(f, writeAll(data), mode, owner,
		func() error { return os.Rename(tmp, path) },
		func() error { return os.Remove(tmp) })
	if err != nil {
		return err
	}
	// The rename is durable once the directory is synced; a failure here
	// leaves a complete file in place, so it is not reported.
	if d, err := os.Open(filepath.Clean(dir)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// placeTemp finishes a temp file written for an atomic replace: fill
// writes the content, the file gets mode (Chmod is not subject to the
// umask; the owner is kept first when owner is set), is synced and closed,
// and rename puts it in place. On any failure remove drops the temp file:
// the target is whole or untouched. While it works it holds a lock on the
// file, which tells removeStaleTemp that its maker is alive even where
// the pid in its name says nothing (another PID namespace).
func placeTemp(f *os.File, fill func(io.Writer) error, mode fs.FileMode, owner *fileOwner, rename, remove func() error) error {
	syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	err := fill(f)
	if err == nil && owner != nil {
		mode, err = keepOwner(f, mode, *owner)
	}
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	// Unlock before closing: a child another goroutine forks at this
	// moment holds a copy of the descriptor until its exec closes it, and
	// with it the lock, which would then sit on the placed file (a
	// session's, whose opener takes that lock) after this returns.
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = rename()
	}
	if err != nil {
		remove()
	}
	return err
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

// writeAll is a fill for placeTemp that writes data.
func writeAll(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

// tempName is the name of a temp file beside base:
// .BASE.zot-PID-RANDOM.tmp, with this process's pid.
func tempName(base string) string {
	if len(base) > 100 {
		base = base[:100]
	}
	var r [6]byte
	rand.Read(r[:])
	return "." + base + ".zot-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(r[:]) + ".tmp"
}

// tempPID is the pid in a name tempName made; ok is false for any other
// name.
func tempPID(name string) (pid int, ok bool) {
	rest, found := strings.CutSuffix(name, ".tmp")
	if !found || len(rest) < 14 || rest[len(rest)-13] != '-' {
		return 0, false
	}
	if _, err := hex.DecodeString(rest[len(rest)-12:]); err != nil || strings.ToLower(rest[len(rest)-12:]) != rest[len(rest)-12:] {
		return 0, false
	}
	rest = rest[:len(rest)-13]
	i := strings.LastIndex(rest, ".zot-")
	if i < 2 || rest[0] != '.' {
		return 0, false
	}
	pid, err := strconv.Atoi(rest[i+5:])
	if err != nil || pid <= 0 || strconv.Itoa(pid) != rest[i+5:] {
		return 0, false
	}
	return pid, true
}

// removeStaleTemp removes dir/name when it is a temp file a zot left
// behind, and says whether it did: the name is one tempName makes, the
// file (or, from a restore, a symlink) is the user's own, no process has
// the pid in its name and none holds its lock. A file zot did not name,
// another user's, or a live zot's is never touched.
func removeStaleTemp(dir, name string) bool {
	pid, ok := tempPID(name)
	if !ok || pid == os.Getpid() || pidInUse(pid) {
		return false
	}
	p := filepath.Join(dir, name)
	fi, err := os.Lstat(p)
	if err != nil || !ownedByUser(fi) {
		return false
	}
	switch {
	case fi.Mode().IsRegular():
		f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			return false
		}
		defer f.Close()
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			return false
		}
		if st, err := f.Stat(); err != nil || !os.SameFile(st, fi) {
			return false
		}
	case fi.Mode()&fs.ModeSymlink == 0:
		return false
	}
	return os.Remove(p) == nil
}

// sweepTemps removes the temp files dead zots left in dir.
func sweepTemps(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, name := range names {
		if strings.HasSuffix(name, ".tmp") && strings.HasPrefix(name, ".") {
			removeStaleTemp(dir, name)
		}
	}
}
