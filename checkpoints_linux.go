//go:build linux

package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"unsafe"
)

// A restore reaches every path below a covered directory from a
// descriptor of that directory, one name at a time with O_NOFOLLOW, and
// changes entries with the *at calls on the descriptor of their parent: a
// symlink put anywhere on the way (by the model, or a process racing the
// restore) is refused, never followed out of the directory.

// ckStatOf is the part of a stat that tells a file unchanged.
func ckStatOf(fi fs.FileInfo) ckFileStat {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ckFileStat{Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Mode: uint32(fi.Mode())}
	}
	return ckFileStat{Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Ino: st.Ino, Mode: st.Mode}
}

// beneath is a covered directory opened for a restore.
type beneath struct {
	fd   int
	path string
}

func openBeneath(root string) (*beneath, error) {
	fd, err := syscall.Open(root, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	return &beneath{fd: fd, path: root}, nil
}

func (b *beneath) close() { syscall.Close(b.fd) }

// parent opens the directory that holds rel; done closes it.
func (b *beneath) parent(rel string) (dirfd int, name string, done func(), err error) {
	parts := strings.Split(rel, "/")
	fd := b.fd
	for i, p := range parts[:len(parts)-1] {
		next, err := syscall.Openat(fd, p, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if fd != b.fd {
			syscall.Close(fd)
		}
		if err != nil {
			return -1, "", nil, notFollowed(strings.Join(parts[:i+1], "/"), err)
		}
		fd = next
	}
	return fd, parts[len(parts)-1], func() {
		if fd != b.fd {
			syscall.Close(fd)
		}
	}, nil
}

// notFollowed explains an open refused because the path is a symlink.
func notFollowed(rel string, err error) error {
	if err == syscall.ELOOP || err == syscall.ENOTDIR {
		return fmt.Errorf("%s is a symlink or a file where a directory should be: not followed", rel)
	}
	return &os.PathError{Op: "open", Path: rel, Err: err}
}

func (b *beneath) remove(rel string) error {
	fd, name, done, err := b.parent(rel)
	if err != nil {
		return err
	}
	defer done()
	if err := syscall.Unlinkat(fd, name); err != nil {
		return &os.PathError{Op: "remove", Path: rel, Err: err}
	}
	return nil
}

func (b *beneath) removeDir(rel string) error {
	fd, name, done, err := b.parent(rel)
	if err != nil {
		return err
	}
	defer done()
	const atRemoveDir = 0x200
	if err := unlinkat(fd, name, atRemoveDir); err != nil {
		return &os.PathError{Op: "remove", Path: rel, Err: err}
	}
	return nil
}

func (b *beneath) mkdir(rel string) error {
	fd, name, done, err := b.parent(rel)
	if err != nil {
		return err
	}
	defer done()
	// Owner-only until chmodDir gives it its mode, after its files.
	if err := syscall.Mkdirat(fd, name, 0o700); err != nil {
		return &os.PathError{Op: "mkdir", Path: rel, Err: err}
	}
	return nil
}

func (b *beneath) chmodDir(rel string, mode uint32) error {
	fd, name, done, err := b.parent(rel)
	if err != nil {
		return err
	}
	defer done()
	dir, err := syscall.Openat(fd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return notFollowed(rel, err)
	}
	defer syscall.Close(dir)
	if err := syscall.Fchmod(dir, mode&0o7777); err != nil {
		return &os.PathError{Op: "chmod", Path: rel, Err: err}
	}
	return nil
}

// writeFile puts what fill writes at rel, with mode: into a temp file
// beside it, synced, then renamed over it.
func (b *beneath) writeFile(rel string, mode fs.FileMode, fill func(io.Writer) error) error {
	fd, name, done, err := b.parent(rel)
	if err != nil {
		return err
	}
	defer done()
	tmp := tempName(name)
	tfd, err := syscall.Openat(fd, tmp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: rel, Err: err}
	}
	err = placeTemp(os.NewFile(uintptr(tfd), tmp), fill, mode, nil,
		func() error { return syscall.Renameat(fd, tmp, fd, name) },
		func() error { return syscall.Unlinkat(fd, tmp) })
	if err != nil {
		return &os.PathError{Op: "write", Path: rel, Err: err}
	}
	return nil
}

func (b *beneath) symlink(rel, target string) error {
	fd, name, done, err := b.parent(rel)
	if err != nil {
		return err
	}
	defer done()
	tmp := tempName(name)
	err = symlinkat(target, fd, tmp)
	if err == nil {
		if err = syscall.Renameat(fd, tmp, fd, name); err != nil {
			syscall.Unlinkat(fd, tmp)
		}
	}
	if err != nil {
		return &os.PathError{Op: "symlink", Path: rel, Err: err}
	}
	return nil
}

// unlinkat and symlinkat with the arguments the syscall package does not
// export.
func unlinkat(dirfd int, name string, flags int) error {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	if _, _, e := syscall.Syscall(syscall.SYS_UNLINKAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(flags)); e != 0 {
		return e
	}
	return nil
}

func symlinkat(target string, dirfd int, name string) error {
	t, err := syscall.BytePtrFromString(target)
	if err != nil {
		return err
	}
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	if _, _, e := syscall.Syscall(syscall.SYS_SYMLINKAT, uintptr(unsafe.Pointer(t)), uintptr(dirfd), uintptr(unsafe.Pointer(p))); e != 0 {
		return e
	}
	return nil
}
