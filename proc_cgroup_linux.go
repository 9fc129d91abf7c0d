//go:build linux

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// A cgroup (v2) of its own for each process zot starts, where zot may make
// one: below zot's own cgroup, when that is writable. A terminal of a
// desktop session under systemd runs in a scope the user's own systemd
// delegates to them, so it is; a login over ssh runs in session-N.scope,
// root's, so it is not, nor is a container that mounts /sys/fs/cgroup
// read-only. The kernel puts everything the child starts into its cgroup
// from the fork on (clone3 with CLONE_INTO_CGROUP, so not even the child
// runs outside it first), and freezes the whole cgroup at once
// (cgroup.freeze): a frozen process can neither start another nor exit,
// so what the cgroup lists then is all there is, and a loop that forks and
// exits cannot slip past the kill. Only processes of the child's session
// are killed; any other (a command's setsid, without the sandbox) is
// moved out to zot's own cgroup and runs on, as it would without
// cgroups. The sandbox's namespaces path needs none: its PID namespace
// holds the command already.

// procCgroup is one child's cgroup.
type procCgroup struct {
	dir string
	fd  int // the directory, open until the child has started in it
}

// cgroupsOff is set once starting a child in a cgroup failed where
// starting it without one worked.
var cgroupsOff atomic.Bool

var cgroupSeq atomic.Int64

// cgroupPrefix begins the name of every cgroup a zot makes; the pid of
// the zot and a number follow.
const cgroupPrefix = "zot-"

// cgroupBase is zot's own cgroup directory, where zot may make cgroups
// (a trial one had cgroup.freeze), else "". On the first call it removes
// the empty cgroups a killed zot left there.
var cgroupBase = sync.OnceValue(func() string {
	if os.Getenv(procForceEnv) != "" {
		return ""
	}
	dir := ownCgroupDir()
	if dir == "" || syscall.Access(filepath.Join(dir, "cgroup.procs"), 2 /* W_OK */) != nil {
		return ""
	}
	trial := filepath.Join(dir, fmt.Sprintf("%s%d-0", cgroupPrefix, os.Getpid()))
	if err := os.Mkdir(trial, 0o755); err != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(trial, "cgroup.freeze")); err != nil { // Linux 5.2
		syscall.Rmdir(trial)
		return ""
	}
	removeStaleCgroups(dir)
	spareCgroup.Lock()
	spareCgroup.dir = trial // the first command's
	spareCgroup.Unlock()
	return dir
})

// spareCgroup is an empty cgroup kept for the next command: the kernel
// makes a cgroup's files at mkdir and takes them down at rmdir, a tenth
// of a millisecond of each tool call here. Only a cgroup that nothing but
// its command's reaped leader ever ran in is kept (procCgroup.keep), and
// never one that was frozen. removeSpareCgroup removes it when zot is
// done; the next zot's start removes a killed one's (removeStaleCgroups).
var spareCgroup struct {
	sync.Mutex
	dir string
}

// ownCgroupDir finds zot's cgroup in the v2 hierarchy: its path from
// /proc/self/cgroup, under where the v2 hierarchy is mounted.
func ownCgroupDir() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	path := ""
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path = p
		}
	}
	if !strings.HasPrefix(path, "/") {
		return ""
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options… - fstype source superoptions
		mount, fs, ok := strings.Cut(sc.Text(), " - ")
		fields := strings.Fields(mount)
		if !ok || len(fields) < 5 || !strings.HasPrefix(fs, "cgroup2 ") || strings.Contains(mount, `\`) {
			continue
		}
		root, point := fields[3], fields[4]
		if rel, ok := strings.CutPrefix(path, strings.TrimSuffix(root, "/")); ok && (rel == "" || rel[0] == '/') {
			return filepath.Join(point, rel)
		}
	}
	return ""
}

// removeStaleCgroups removes the cgroups that zots no longer running left
// in dir (killed before they could): empty ones only, since the kernel
// refuses to remove any other.
func removeStaleCgroups(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), cgroupPrefix)
		pid, _, _ := strings.Cut(rest, "-")
		if n, err := strconv.Atoi(pid); ok && err == nil && n != os.Getpid() && syscall.Kill(n, 0) == syscall.ESRCH {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// newProcCgroup makes a cgroup for a child and sets attr to start the
// child in it; nil where there is none to be had, or the child gets a
// PID namespace.
func newProcCgroup(attr *syscall.SysProcAttr) *procCgroup {
	base := cgroupBase()
	if base == "" || cgroupsOff.Load() || attr.Cloneflags&syscall.CLONE_NEWPID != 0 {
		return nil
	}
	dir := takeSpareCgroup()
	if dir == "" {
		dir = filepath.Join(base, fmt.Sprintf("%s%d-%d", cgroupPrefix, os.Getpid(), cgroupSeq.Add(1)))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil // cgroup.max.descendants, say: the child goes without
		}
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		(&procCgroup{dir: dir, fd: -1}).remove()
		return nil
	}
	attr.UseCgroupFD, attr.CgroupFD = true, fd
	return &procCgroup{dir: dir, fd: fd}
}

func cgroupsFailed() { cgroupsOff.Store(true) }

// started closes what only the start needed.
func (c *procCgroup) started() {
	syscall.Close(c.fd)
	c.fd = -1
}

// discard gives up a cgroup no child started in.
func (c *procCgroup) discard() {
	c.started()
	c.keep()
}

// keep keeps the cgroup as the spare, or removes it when there is one.
// Only a cgroup that nothing but a reaped leader ran in may be kept.
func (c *procCgroup) keep() {
	spareCgroup.Lock()
	if spareCgroup.dir == "" {
		spareCgroup.dir = c.dir
		spareCgroup.Unlock()
		return
	}
	spareCgroup.Unlock()
	c.remove()
}

// removeSpareCgroup removes the spare cgroup, when zot starts no more
// commands. There is none before a process was started.
func removeSpareCgroup() {
	if !startedAny.Load() {
		return
	}
	if dir := takeSpareCgroup(); dir != "" {
		(&procCgroup{dir: dir, fd: -1}).remove()
	}
}

// takeSpareCgroup takes the spare cgroup's directory, "" when there is none.
func takeSpareCgroup() string {
	spareCgroup.Lock()
	defer spareCgroup.Unlock()
	dir := spareCgroup.dir
	spareCgroup.dir = ""
	return dir
}

func (c *procCgroup) file(name string) string { return c.dir + "/" + name }

// pids lists the processes in the cgroup.
func (c *procCgroup) pids() ([]int, error) {
	b, err := readProcFile(c.file("cgroup.procs"))
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids, err
}

// populated reports whether a live process is in the cgroup (a zombie
// is not).
func (c *procCgroup) populated() (bool, error) {
	b, err := readProcFile(c.file("cgroup.events"))
	return bytes.Contains(b, []byte("populated 1")), err
}

func (c *procCgroup) freeze(on bool) error {
	v := "0"
	if on {
		v = "1"
	}
	return writeProcFile(c.file("cgroup.freeze"), []byte(v))
}

// waitFrozen waits up to d for every process in the cgroup to be frozen,
// woken by the kernel's notice on cgroup.events, and reports whether they
// are.
func (c *procCgroup) waitFrozen(d time.Duration) bool {
	fd, err := syscall.Open(c.file("cgroup.events"), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	deadline := time.Now().Add(d)
	buf := make([]byte, 256)
	for {
		procFilesRead.Add(1)
		n, err := syscall.Pread(fd, buf, 0)
		if err != nil {
			return false
		}
		if bytes.Contains(buf[:max(n, 0)], []byte("frozen 1")) {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		const pollPri = 0x2
		pfd := struct {
			fd             int32
			events, revent int16
		}{int32(fd), pollPri, 0}
		ts := syscall.NsecToTimespec(int64(left))
		syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	}
}

// moveOut moves pid to zot's own cgroup.
func (c *procCgroup) moveOut(pid int) error {
	return writeProcFile(filepath.Join(filepath.Dir(c.dir), "cgroup.procs"), []byte(strconv.Itoa(pid)))
}

// stopSession sends what esc chooses to the processes of the session sid
// in the cgroup, and reports whether any live one is left; ok is false
// when the cgroup cannot be read (the caller looks through /proc then).
// It looks with the cgroup frozen, so that what it lists is all there
// is: before the grace period ends each process of the session gets
// SIGTERM once (target chooses the process or its group), after it
// SIGKILL; anything else is moved out.
func (c *procCgroup) stopSession(sid int, esc *escalation, target func(procStat) int) (left, ok bool) {
	switch populated, err := c.populated(); {
	case err != nil:
		return false, false
	case !populated:
		return false, true
	}
	if c.freeze(true) != nil {
		return false, false
	}
	defer c.freeze(false)
	// A process stuck in the kernel does not freeze: then what is listed
	// may not be all, and Stop looks again.
	frozen := c.waitFrozen(time.Second)
	pids, err := c.pids()
	if err != nil {
		return false, false
	}
	// The table is locked so that the orphan reaper does not reap one of
	// them (a frozen process does not exit, but a SIGKILL from elsewhere
	// ends it) and let its pid be reused.
	children.Lock()
	defer children.Unlock()
	killing := esc.killing()
	for _, pid := range pids {
		s, ok := readProcStat(strconv.Itoa(pid))
		switch {
		case !ok || s.zombie():
		case s.sid != sid:
			c.moveOut(pid)
		default:
			left = true
			esc.saw(s)
			t := target(s)
			if killing {
				t = pid
			}
			sendStop(t, esc.signal(t))
		}
	}
	return left || !frozen, true
}

// remove removes the cgroup once its child has been reaped. What is still
// in it is no process of the child's session (stopSession killed those):
// it is moved out to zot's own cgroup first, frozen meanwhile so that it
// cannot start another inside.
func (c *procCgroup) remove() {
	err := syscall.Rmdir(c.dir)
	if !errors.Is(err, syscall.EBUSY) || c.freeze(true) != nil {
		return
	}
	c.waitFrozen(time.Second)
	pids, _ := c.pids()
	for _, pid := range pids {
		c.moveOut(pid)
	}
	c.freeze(false)
	syscall.Rmdir(c.dir)
}
