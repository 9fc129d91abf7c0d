package main

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// How zot finds what a process it started left running, and how it stops
// a set of processes that is still changing under it (proc.go's Stop, and
// the adopted orphans at exit).
//
// Finding follows the process tree down from zot instead of reading every
// process on the machine: zot is the subreaper of what it starts
// (adoptOrphans), so each process a command started is below the
// command's leader or, once its parent died, below zot. The children of a
// process are in /proc/<pid>/task/<tid>/children (one file per thread,
// since a child belongs to the thread that started it). Where those files
// are missing (a kernel without CONFIG_PROC_CHILDREN) or zot is not the
// subreaper (macOS has none; a program embedding the core that did not
// call adoptOrphans), orphans are not below zot, and zot falls back to
// reading the stat file of every process. Where a cgroup of the process's
// own is available (proc_cgroup_linux.go) it is looked at first.

// procForceEnv is a test knob, read once: "tree" keeps zot from using
// cgroups, "scan" also from following the tree, so that each fallback can
// be tested and measured where something better is available.
const procForceEnv = "ZOT_PROC_FORCE"

// procFilesRead counts the files under /proc and in cgroups that process
// tracking read: the tests' measure of its work, which must grow with the
// processes zot started, not with those on the machine.
var procFilesRead atomic.Int64

// readProcFile reads a file of /proc or of a cgroup in three system calls
// or so: os.ReadFile would also offer the file to the runtime's poller
// (which refuses it, in four more) and ask its size, which such a file
// does not know. Stop reads a dozen of them at the end of each call.
func readProcFile(path string) ([]byte, error) {
	procFilesRead.Add(1)
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		n, err := syscall.Read(fd, b[len(b):cap(b)])
		switch {
		case err == syscall.EINTR:
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return b, nil
		default:
			b = b[:len(b)+n]
		}
	}
}

// writeProcFile writes a cgroup's control file as readProcFile reads.
func writeProcFile(path string, data []byte) error {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	for {
		_, err := syscall.Write(fd, data)
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "write", Path: path, Err: err}
			}
			return nil
		}
	}
}

// procDirNames lists the names in a directory of /proc, as readProcFile
// reads a file.
func procDirNames(path string) ([]string, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var names []string
	buf := make([]byte, 4096)
	for {
		n, err := syscall.ReadDirent(fd, buf)
		switch {
		case err == syscall.EINTR:
		case err != nil:
			return nil, &os.PathError{Op: "readdirent", Path: path, Err: err}
		case n <= 0:
			return names, nil
		default:
			_, _, names = syscall.ParseDirent(buf[:n], -1, names)
		}
	}
}

// subreaper is set once adoptOrphans made zot the reaper of its
// descendants' orphans.
var subreaper atomic.Bool

// childrenFiles reports whether this kernel has /proc/<pid>/task/<tid>/children.
var childrenFiles = sync.OnceValue(func() bool {
	if os.Getenv(procForceEnv) == "scan" {
		return false
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil || len(tasks) == 0 {
		return false
	}
	_, err = os.Stat("/proc/self/task/" + tasks[0].Name() + "/children")
	return err == nil
})

// followsTree reports whether everything zot's children left is found by
// following the tree down from zot.
func followsTree() bool { return subreaper.Load() && childrenFiles() }

// procStat is what /proc/<pid>/stat says of a process. pid and start
// together name one process: a pid can be reused once its process is
// reaped, with a later start time.
type procStat struct {
	pid, ppid, pgrp, sid int
	state                byte
	start                uint64 // clock ticks after boot
	thread               bool   // a thread of another process (its id is a pid too)
}

func (s procStat) zombie() bool { return s.state == 'Z' || s.state == 'X' }

// stopped: in a stop (SIGSTOP, or a tracer's), it can neither run nor
// start another process until something running sends it SIGCONT.
func (s procStat) stopped() bool { return s.state == 'T' || s.state == 't' }

// readProcs reads every process's stat, the newest first; ok is false
// where there is no /proc. A process that ends while it is read is left
// out. It costs a few milliseconds on a loaded machine: only the
// fallbacks use it. Newest first, since a process that forks and exits
// in a loop is always among the newest: read early, it is more likely
// still there to be stopped.
func readProcs() (procs []procStat, ok bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, false
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var pids []int
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil {
			pids = append(pids, pid)
		}
	}
	slices.SortFunc(pids, func(a, b int) int { return b - a })
	for _, pid := range pids {
		if s, ok := readProcStat(strconv.Itoa(pid)); ok {
			procs = append(procs, s)
		}
	}
	return procs, true
}

func readProcStat(pid string) (procStat, bool) {
	b, err := readProcFile("/proc/" + pid + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// pid (comm) state ppid pgrp session … starttime (the 22nd field);
	// comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 36 || len(f[0]) != 1 {
		return procStat{}, false
	}
	// A thread's exit signal (the 38th field) is -1.
	s := procStat{state: f[0][0], thread: f[35] == "-1"}
	var errs [5]error
	s.pid, errs[0] = strconv.Atoi(pid)
	s.ppid, errs[1] = strconv.Atoi(f[1])
	s.pgrp, errs[2] = strconv.Atoi(f[2])
	s.sid, errs[3] = strconv.Atoi(f[3])
	s.start, errs[4] = strconv.ParseUint(f[19], 10, 64)
	return s, errors.Join(errs[:]...) == nil
}

// childrenOf lists the children of pid ("self" for zot), every thread's,
// the newest first (as readProcs). A process that is gone has none.
func childrenOf(pid string) []int {
	procFilesRead.Add(1)
	tasks, err := procDirNames("/proc/" + pid + "/task")
	if err != nil {
		return nil
	}
	var kids []int
	for _, t := range tasks {
		b, err := readProcFile("/proc/" + pid + "/task/" + t + "/children")
		if err != nil {
			continue // the thread ended
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				kids = append(kids, n)
			}
		}
	}
	slices.Reverse(kids) // each file lists the oldest first
	return kids
}

// finder lists a set of processes, zombies included. It is called with
// the children table locked (so that the orphan reaper reaps none of
// them meanwhile: an adopted one is zot's child, and its pid cannot be
// reused while zot has not reaped it), and calls visit on each process it
// lists right after reading its stat and before looking below it: a
// signal sent there reaches the process just read, and a stop comes
// before its children are read.
type finder func(visit func(procStat)) []procStat

// walkProcs lists the processes at and below roots that keep accepts,
// looking below only those it accepts.
func walkProcs(roots []int, keep func(procStat) bool, visit func(procStat)) []procStat {
	var found []procStat
	seen := map[int]bool{}
	for queue := roots; len(queue) > 0; queue = queue[1:] {
		pid := queue[0]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		s, ok := readProcStat(strconv.Itoa(pid))
		if !ok || !keep(s) {
			continue
		}
		found = append(found, s)
		visit(s)
		if !s.zombie() {
			queue = append(queue, childrenOf(strconv.Itoa(pid))...)
		}
	}
	return found
}

// sessionProcs is the finder of the session sid but its leader (sid is
// the leader's pid), for once the leader has exited: then all of it is
// below zot, orphans zot adopted and theirs. Without the tree to follow
// it looks at the processes started since since (newPids), or, where that
// cannot be known, at every process.
func sessionProcs(sid int, since forkMark) finder {
	inSession := func(s procStat) bool { return s.sid == sid && s.pid != sid && !s.thread }
	known := map[int]uint64{} // the live ones found so far
	return func(visit func(procStat)) []procStat {
		if followsTree() {
			return walkProcs(childrenOf("self"), inSession, visit)
		}
		now := readForkMark()
		pids, ok := newPids(since, now)
		since = now
		if !ok {
			all, _ := readProcs()
			clear(known)
			for _, s := range all {
				pids = append(pids, s.pid)
			}
		}
		for pid := range known {
			pids = append(pids, pid)
		}
		var procs []procStat
		for _, pid := range pids {
			s, ok := readProcStat(strconv.Itoa(pid))
			if start, was := known[pid]; was && (!ok || s.start != start || s.zombie()) {
				delete(known, pid)
			}
			if !ok || !inSession(s) {
				continue
			}
			if !s.zombie() {
				known[pid] = s.start
			}
			procs = append(procs, s)
			visit(s)
		}
		return procs
	}
}

// forkMark is how far the system had given out pids: the last pid given
// in zot's PID namespace, the processes and threads started since boot,
// and how many there are now.
type forkMark struct {
	last, running int
	forks         uint64
	ok            bool
}

// readForkMark reads the mark now (/proc/loadavg, /proc/stat); it is not
// ok where they cannot be read.
func readForkMark() forkMark {
	last, running, ok := readLoadavg()
	if !ok {
		return forkMark{}
	}
	stat, err := readProcFile("/proc/stat")
	_, rest, found := bytes.Cut(stat, []byte("\nprocesses "))
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	forks, err2 := strconv.ParseUint(string(line), 10, 64)
	return forkMark{last: last, running: running, forks: forks, ok: err == nil && found && err2 == nil}
}

// readLoadavg reads the last pid given in zot's PID namespace and how many
// processes and threads there are, from /proc/loadavg. ok is false where
// it cannot be read, or is not the kernel's own file (kernelsLoadavg):
// lxcfs mounts one over it in some containers, with figures it caches.
func readLoadavg() (last, running int, ok bool) {
	if !kernelsLoadavg() {
		return 0, 0, false
	}
	load, err := readProcFile("/proc/loadavg")
	f := strings.Fields(string(load))
	if err != nil || len(f) < 5 {
		return 0, 0, false
	}
	_, total, _ := strings.Cut(f[3], "/")
	last, err1 := strconv.Atoi(f[4])
	running, err2 := strconv.Atoi(total)
	return last, running, err1 == nil && err2 == nil
}

// pidMax is where pids come round again.
var pidMax = sync.OnceValue(func() int {
	b, _ := os.ReadFile("/proc/sys/kernel/pid_max")
	if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
		return n
	}
	return 1 << 22 // the kernel's limit
})

// newPids lists the pids the system may have given out between the marks
// m and now, the newest first: pids are given in turn, coming round at
// pid_max, so they are those after m's last up to now's. ok is false when
// that is not sure — so many forks between them that the count could
// have come round past m's last again — or when the list would be longer
// than looking at every process.
func newPids(m, now forkMark) (pids []int, ok bool) {
	if !m.ok || !now.ok || now.forks-m.forks >= uint64(pidMax()/2) {
		return nil, false
	}
	n := now.last - m.last
	if n < 0 {
		n += pidMax()
	}
	if n > now.running {
		return nil, false
	}
	for pid := now.last; pid != m.last; pid-- {
		if pid <= 0 {
			pid = pidMax()
			continue
		}
		pids = append(pids, pid)
	}
	return pids, true
}

// stopTick is how often the stop sequence looks again for what is left.
const stopTick = 10 * time.Millisecond

// escalation is the stop sequence's choice of signal for each target:
// SIGTERM once until the grace period ends, then the kill. It gives up on
// what will not die only when nothing new has turned up for a second
// after the kill began (a process stuck in the kernel); a set that keeps
// changing — a loop that forks and exits — is followed as long as it
// does.
type escalation struct {
	killAt  time.Time
	termed  map[int]bool
	seen    map[int]uint64 // pid → start time of each live process found
	dead    map[int]uint64 // the zombies of the last look
	lastNew time.Time
	result  stopResult
}

func newEscalation(grace time.Duration) *escalation {
	return &escalation{killAt: time.Now().Add(grace), termed: map[int]bool{}, seen: map[int]uint64{}, dead: map[int]uint64{}}
}

func (e *escalation) killing() bool { return !time.Now().Before(e.killAt) }

// signal is the signal for target now: SIGTERM the first time before the
// grace period ends, nothing after that until it ends, SIGKILL from then.
func (e *escalation) signal(target int) syscall.Signal {
	switch {
	case e.killing():
		e.result = neededSIGKILL
		return syscall.SIGKILL
	case e.termed[target]:
		return 0
	}
	e.termed[target] = true
	e.result = max(e.result, endedAtTERM)
	return syscall.SIGTERM
}

// saw notes a live process found, for givenUp.
func (e *escalation) saw(s procStat) {
	if start, ok := e.seen[s.pid]; !ok || start != s.start {
		e.seen[s.pid] = s.start
		e.lastNew = time.Now()
	}
}

// look lists what find finds, split into the live processes and whether
// one died since the last look, and calls visit on each as it is found.
// A look that finds nothing live can still have missed something when one
// died meanwhile: a process that forks and exits hands its child to its
// parent's reaper as it dies, perhaps after that reaper's children were
// read. Only a look with nothing live and no new zombie says that nothing
// is left. (The orphan reaper leaves the zombies alone meanwhile, so that
// none vanishes unseen.)
func (e *escalation) look(find finder, visit func(procStat)) (live []procStat, newlyDead bool) {
	children.Lock()
	procs := find(visit)
	children.Unlock()
	now := map[int]uint64{}
	for _, s := range procs {
		if !s.zombie() {
			live = append(live, s)
			e.saw(s)
			continue
		}
		now[s.pid] = s.start
		if start, ok := e.dead[s.pid]; !ok || start != s.start {
			newlyDead = true
			e.lastNew = time.Now() // the set still changes
		}
	}
	e.dead = now
	return live, newlyDead
}

func (e *escalation) givenUp() bool {
	return time.Since(e.killAt) > time.Second && time.Since(e.lastNew) > time.Second
}

// sendStop sends s (0: nothing) to target, a pid or a negated group id;
// SIGTERM comes with SIGCONT, so a stopped process gets to act on it.
func sendStop(target int, s syscall.Signal) {
	if s == 0 {
		return
	}
	syscall.Kill(target, s)
	if s == syscall.SIGTERM {
		syscall.Kill(target, syscall.SIGCONT)
	}
}

// stopFound signals the live processes find lists, and reports whether
// anything may be left. Before the grace period ends each target gets
// SIGTERM once (target chooses it: the process, or its group); after it,
// the set is frozen and killed (freezeAndKill).
func (e *escalation) stopFound(find finder, target func(procStat) int) (left bool) {
	if e.killing() {
		return e.freezeAndKill(find)
	}
	live, newlyDead := e.look(find, func(s procStat) {
		if !s.zombie() {
			t := target(s)
			sendStop(t, e.signal(t))
		}
	})
	return len(live) > 0 || newlyDead
}

// freezeAndKill stops (SIGSTOP) each live process that find lists as it
// finds it, and looks again, until one look finds every process stopped
// and none that died since the look before; then it kills them all, and
// reports whether there was anything to kill. A stopped process can
// neither start another nor wake one, and one that died was seen dead, so
// that look missed nothing (see look): a loop that forks and exits cannot
// slip past it, as it can past a look and a kill. It gives up looking,
// and kills what it has, when the set stays the same and will not stop (a
// process stuck in the kernel).
func (e *escalation) freezeAndKill(find finder) (left bool) {
	e.result = neededSIGKILL
	for {
		before := e.lastNew
		running := false
		live, newlyDead := e.look(find, func(s procStat) {
			if !s.zombie() && !s.stopped() {
				running = true
				syscall.Kill(s.pid, syscall.SIGSTOP)
			}
		})
		if !running && !newlyDead || e.givenUp() {
			children.Lock()
			for _, s := range live {
				if now, ok := readProcStat(strconv.Itoa(s.pid)); ok && now.start == s.start && !now.zombie() {
					syscall.Kill(s.pid, syscall.SIGKILL)
				}
			}
			children.Unlock()
			return len(live) > 0 || newlyDead
		}
		if running && e.lastNew == before {
			// The same ones, not stopped yet: a signal takes a moment to
			// reach a process that is not on a CPU.
			time.Sleep(100 * time.Microsecond)
		}
	}
}
