//go:build !linux

package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
)

// Without Linux's *at calls in the syscall package, a restore checks each
// directory on the way with lstat and refuses a symlink, then works by
// path, opening the last name with O_NOFOLLOW. A process that swaps a
// directory for a symlink between the check and the use can still send a
// write through it: docs/checkpoints.md says so.

// ckStatOf is the part of a stat that tells a file unchanged; the inode
// and ctime fields are named differently across the BSDs.
func ckStatOf(fi fs.FileInfo) ckFileStat {
	s := ckFileStat{Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Mode: uint32(fi.Mode())}
	v := reflect.ValueOf(fi.Sys())
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return s
	}
	st := v.Elem()
	if f := st.FieldByName("Ino"); f.IsValid() && f.CanUint() {
		s.Ino = f.Uint()
	}
	for _, name := range []string{"Ctimespec", "Ctim"} {
		if f := st.FieldByName(name); f.IsValid() {
			if ts, ok := f.Interface().(syscall.Timespec); ok {
				s.Ctime = ts.Nano()
			}
			break
		}
	}
	return s
}

type beneath struct{ path string }

func openBeneath(root string) (*beneath, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", root)
	}
	return &beneath{path: root}, nil
}

func (b *beneath) close() {}

// parent checks each directory on the way to rel and returns the path of
// the one that holds it.
func (b *beneath) parent(rel string) (string, error) {
	parts := strings.Split(rel, "/")
	dir := b.path
	for i, p := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, p)
		fi, err := os.Lstat(dir)
		if err != nil {
			return "", err
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("%s is a symlink or a file where a directory should be: not followed", strings.Join(parts[:i+1], "/"))
		}
	}
	return dir, nil
}

func (b *beneath) at(rel string) (string, error) {
	dir, err := b.parent(rel)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(rel)), nil
}

func (b *beneath) remove(rel string) error {
	p, err := b.at(rel)
	if err != nil {
		return err
	}
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		return &os.PathError{Op: "remove", Path: rel, Err: syscall.EISDIR}
	}
	return os.Remove(p)
}

func (b *beneath) removeDir(rel string) error {
	p, err := b.at(rel)
	if err != nil {
		return err
	}
	if err := syscall.Rmdir(p); err != nil {
		return &os.PathError{Op: "remove", Path: rel, Err: err}
	}
	return nil
}

func (b *beneath) mkdir(rel string) error {
	p, err := b.at(rel)
	if err != nil {
		return err
	}
	return os.Mkdir(p, 0o700)
}

func (b *beneath) chmodDir(rel string, mode uint32) error {
	p, err := b.at(rel)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Chmod(modeFromUnix(mode))
}

func (b *beneath) writeFile(rel string, mode fs.FileMode, fill func(io.Writer) error) error {
	p, err := b.at(rel)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(p), tempName(filepath.Base(p)))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	return placeTemp(f, fill, mode, nil,
		func() error { return os.Rename(tmp, p) },
		func() error { return os.Remove(tmp) })
}

func (b *beneath) symlink(rel, target string) error {
	p, err := b.at(rel)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(p), tempName(filepath.Base(p)))
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
