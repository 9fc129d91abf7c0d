package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// tmpfsTempDir puts the tests' temporary files — t.TempDir, the zot build,
// every child's $TMPDIR — on /dev/shm, when TMPDIR is not set and /dev/shm
// is a tmpfs with 2 GiB free on which a file can be run. Making and
// removing files is most of what the suite asks of a file system, and it
// is dear on a disk: on an ext4 without a journal each new inode is checked
// against the recently deleted ones (docs/choices.md, "The suite's time").
// It returns what removes the directory.
func tmpfsTempDir() (remove func()) {
	const shm, tmpfsMagic = "/dev/shm", 0x01021994
	var st syscall.Statfs_t
	if os.Getenv("TMPDIR") != "" || syscall.Statfs(shm, &st) != nil || st.Type != tmpfsMagic || uint64(st.Bavail)*uint64(st.Bsize) < 2<<30 {
		return func() {}
	}
	dir, err := os.MkdirTemp(shm, "z") // short: some tests show paths whole in 120 columns
	if err != nil {
		return func() {}
	}
	remove = func() { os.RemoveAll(dir) }
	// Open to all, sticky, as /tmp is: a test runs a child as nobody, which
	// makes its own directories here. A mount that runs nothing (noexec)
	// would fail every test that builds a program.
	probe := filepath.Join(dir, "probe")
	if os.Chmod(dir, 0o777|os.ModeSticky) != nil || os.WriteFile(probe, []byte("#!/bin/sh\n"), 0o755) != nil || exec.Command(probe).Run() != nil {
		remove()
		return func() {}
	}
	os.Remove(probe)
	os.Setenv("TMPDIR", dir)
	return remove
}
