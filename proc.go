package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// This file is the one way zot starts and stops a child process: the
// model's commands, hooks, validators, extensions, MCP servers and git.
//
// Every child gets a session of its own (and so a process group of its
// own, both numbered by its pid), an environment chosen by an explicit
// policy, and exactly the streams its owner asked for. It is stopped by one
// sequence — SIGTERM and SIGCONT, a grace period, SIGKILL — that reaches
// its whole session: its group, and the processes that left the group
// (`set -m`, setpgid, setpgrp) but cannot leave the session except by
// starting a new one (setsid). The leader is reaped only after that
// sequence, so while zot signals the group the leader's unreaped exit
// holds the id, and a reused id is never signalled.

// envPolicy says which of zot's environment variables a child inherits.
// startProc refuses the zero value: every caller says which policy applies.
type envPolicy int

const (
	// envNoSecrets is zot's environment without zot's secrets
	// (secretEnvVars), so a child does not come across a key in its
	// environment. It can still read files that hold one (auth.json):
	// docs/security.md says how far this goes.
	envNoSecrets envPolicy = iota + 1
)

// secretEnvVars are zot's own secrets: provider keys and the RPC token.
var secretEnvVars = []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ZOTCORE_RPC_TOKEN"}

func isSecretEnv(name string) bool {
	for _, s := range secretEnvVars {
		if name == s {
			return true
		}
	}
	return false
}

func (e envPolicy) environ() ([]string, error) {
	switch e {
	case envNoSecrets:
		var env []string
		for _, kv := range os.Environ() {
			if name, _, _ := strings.Cut(kv, "="); !isSecretEnv(name) {
				env = append(env, kv)
			}
		}
		return env, nil
	}
	return nil, fmt.Errorf("no environment policy given (%d); this is a bug in zot", e)
}

// procStream says what one of a child's standard streams is connected to.
type procStream int

const (
	streamNull   procStream = iota // /dev/null
	streamPipe                     // a pipe; zot holds the other end
	streamStdout                   // stderr only: the stdout pipe, so the order of the two is kept
	streamFile                     // stderr only: procSpec.stderrFile, written by the child directly
)

// procSpec is what to start.
type procSpec struct {
	argv []string // the program (a bare name is looked up in $PATH) and its arguments
	// path, when set, is the program's file, and argv[0] only the name it
	// goes by (as a shell passes the word typed).
	path string
	// execMayFail: the program is any file (the bash tool's direct run),
	// whose exec may fail on its own (no #!, busy being written); such a
	// failure says nothing of cgroups, so the start is not tried again
	// without one.
	execMayFail bool
	dir         string    // working directory; "" is zot's
	env         envPolicy // required: which of zot's variables it inherits
	// addEnv are NAME=value pairs set after the policy's variables; a
	// name given twice takes its last value.
	addEnv                []string
	stdin, stdout, stderr procStream
	stderrFile            *os.File // with stderr streamFile: a log the child appends to
	// sys adds process attributes (namespaces, credentials: the sandbox
	// launcher's Cloneflags and UidMappings). startProc owns the session
	// and group fields and overwrites them.
	sys *syscall.SysProcAttr
	// reportsEnd: the program's fd 3 is a pipe on which it writes its exit
	// status (a decimal number and a newline) once nothing it started
	// runs any more, just before it exits: the sandbox launcher, whose own
	// exit waits for the kernel to tear its namespaces down. The proc
	// counts as exited at the report; the leader is reaped in the
	// background (Gone).
	reportsEnd bool
	// bigStdout: a stdout pipe of bigPipe bytes where the kernel allows it
	// (growPipe; proc.bigStdout says whether it did), and one the
	// runtime's poller does not watch (unwatchedPipe), for a command whose
	// output may be large: a bash call's.
	bigStdout bool
}

// bigPipe is the stdout pipe's size with bigStdout, and what one read of
// it gives at most: a spill file's chunk (spillChunk).
const bigPipe = 1 << 20

// proc is one started child. Its owner reads Exited or calls waitExit to
// learn that it ended, may Stop it at any time before Reap, and must Reap
// it once: Reap stops whatever its session left running and releases the
// process. The streams asked for as pipes are zot's ends; the owner reads,
// writes and closes them.
type proc struct {
	cmd    *exec.Cmd
	pid    int // also its session id and process group id
	stdin  *os.File
	stdout *os.File
	stderr *os.File
	// bigStdout: stdout is a pipe that holds bigPipe bytes.
	bigStdout bool
	// unwatched: stdout is an unwatchedPipe's; read it through
	// stdoutReader.
	unwatched bool
	exited    chan struct{} // closed when the leader has exited (or reported its end); it stays unreaped until Reap
	gone      chan struct{} // closed when the leader has been reaped
	report    *os.File      // with reportsEnd: where the leader reports its end

	mu       sync.RWMutex // Stop holds it shared and Reap exclusively, so no signal follows the reap
	released bool         // reaped: its ids may be a stranger's now
	empty    atomic.Bool  // no live process was left in its session: none can join it any more
	mark     forkMark     // pids given out before it started (sessionProcs)
	cg       *procCgroup  // its cgroup, or nil (proc_cgroup_linux.go)
	cgDone   atomic.Bool  // nothing of its session is left in cg
	// after is what nothingStartedAfter found, read once: afterNothing
	// (cg held no other process of zot's) or afterSomething.
	after    atomic.Int32
	reapOnce sync.Once
	state    *os.ProcessState
	waitErr  error
	early    bool // reaped when it exited, where the system cannot wait without reaping
	// reported: the leader reported its end (reportsEnd) with status
	// reportedCode; nothing of its session runs but the leader itself,
	// which the watcher reaps.
	reported     bool
	reportedCode int
}

// deadlineReader is the read end of a pipe with a read deadline: an
// *os.File, or an unwatched pipe's reader (stdoutReader).
type deadlineReader interface {
	io.ReadCloser
	SetReadDeadline(time.Time) error
}

// stdoutReader reads the stdout pipe; its owner closes it instead of
// p.stdout.
func (p *proc) stdoutReader() deadlineReader {
	if p.unwatched {
		return newPipeReader(p.stdout)
	}
	return p.stdout
}

// startProc starts spec's program in a session of its own. Its errors are
// the pipe's or exec's, unwrapped to what errors.As finds; the caller names
// what it started.
func startProc(spec procSpec) (*proc, error) {
	if len(spec.argv) == 0 {
		return nil, errors.New("no program to start; this is a bug in zot")
	}
	env, err := spec.env.environ()
	if err != nil {
		return nil, err
	}
	if spec.dir != "" {
		// A shell takes its directory's name from $PWD when $PWD names
		// it, else the real path: where spec.dir is reached through a
		// link, cd .. goes where the validators' splitter says only so.
		env = append(env, "PWD="+spec.dir)
	}
	cmd := exec.Command(cmp.Or(spec.path, spec.argv[0]), spec.argv[1:]...)
	cmd.Args[0] = spec.argv[0]
	cmd.Dir = spec.dir
	cmd.Env = append(env, spec.addEnv...)
	attr := syscall.SysProcAttr{}
	if spec.sys != nil {
		attr = *spec.sys
	}
	attr.Setsid, attr.Setpgid, attr.Pgid, attr.Setctty, attr.Foreground = true, false, 0, false, false
	cmd.SysProcAttr = &attr

	p := &proc{cmd: cmd, exited: make(chan struct{}), gone: make(chan struct{})}
	var theirs []*os.File // the child's ends, closed once it holds them
	fail := func(err error) (*proc, error) {
		for _, f := range append(theirs, p.stdin, p.stdout, p.stderr, p.report) {
			if f != nil {
				f.Close()
			}
		}
		return nil, err
	}
	pipe := func(forChild bool, open func() (r, w *os.File, err error)) (child, ours *os.File, err error) {
		r, w, err := open()
		if err != nil {
			return nil, nil, fmt.Errorf("create a pipe: %w", err)
		}
		if forChild { // the child reads: stdin
			theirs = append(theirs, r)
			return r, w, nil
		}
		theirs = append(theirs, w)
		return w, r, nil
	}
	if spec.stdin == streamPipe {
		if cmd.Stdin, p.stdin, err = pipe(true, os.Pipe); err != nil {
			return fail(err)
		}
	} else if null, err := devNull(); err == nil {
		cmd.Stdin = null // else exec.Cmd opens it
	}
	if spec.stdout == streamPipe {
		open := os.Pipe
		if spec.bigStdout {
			open, p.unwatched = unwatchedPipe, true
		}
		if cmd.Stdout, p.stdout, err = pipe(false, open); err != nil {
			return fail(err)
		}
		if spec.bigStdout {
			p.bigStdout = growPipe(p.stdout)
		}
	}
	if spec.reportsEnd {
		child, ours, err := pipe(false, os.Pipe)
		if err != nil {
			return fail(err)
		}
		cmd.ExtraFiles, p.report = []*os.File{child}, ours
	}
	switch spec.stderr {
	case streamPipe:
		if cmd.Stderr, p.stderr, err = pipe(false, os.Pipe); err != nil {
			return fail(err)
		}
	case streamStdout:
		cmd.Stderr = cmd.Stdout
	case streamFile:
		if spec.stderrFile != nil {
			cmd.Stderr = spec.stderrFile
		}
	}

	// Where it can, the child starts in a cgroup of its own, which the
	// kernel keeps everything it starts in (proc_cgroup_linux.go).
	plain := attr
	cg := newProcCgroup(&attr)
	if hasProc() && !followsTree() {
		p.mark = readForkMark()
	}
	children.Lock()
	startedAny.Store(true)
	err = cmd.Start()
	if err != nil && cg != nil {
		cg.discard()
		cg = nil
		if !spec.execMayFail {
			// Once more without the cgroup: if that works, starting a
			// child in a cgroup does not (a kernel before 5.7, a cgroup of
			// another type), and zot stops trying.
			again := exec.Command(cmd.Path)
			again.Args, again.Dir, again.Env, again.SysProcAttr = cmd.Args, cmd.Dir, cmd.Env, &plain
			again.Stdin, again.Stdout, again.Stderr, again.ExtraFiles = cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.ExtraFiles
			if err = again.Start(); err == nil {
				cgroupsFailed()
			}
			cmd, p.cmd = again, again
		}
	}
	if err == nil {
		p.pid = cmd.Process.Pid
		children.started[p.pid] = true
		if cg != nil {
			cg.started()
			p.cg = cg
		}
	}
	children.Unlock()
	for _, f := range theirs {
		f.Close() // the child holds them now; EOF comes when it and its children are gone
	}
	theirs = nil
	if err != nil {
		return fail(err)
	}
	// The watcher: ends when the leader has exited, or, when it reported
	// its end, once it is reaped.
	go func() {
		if p.report != nil {
			code, ok := readEndReport(p.report)
			p.report.Close()
			if ok {
				p.reported, p.reportedCode = true, code
				p.empty.Store(true)
				close(p.exited)
				p.waitLeader()
				p.release()
				return
			}
		}
		p.waitLeader()
		close(p.exited)
	}()
	return p, nil
}

// waitLeader waits for the leader to exit, unreaped where the system
// allows it.
func (p *proc) waitLeader() {
	if !waitUnreaped(p.pid) {
		p.early = true
		p.waitErr = p.cmd.Wait()
		p.state = p.cmd.ProcessState
	}
}

// readEndReport reads the status a reportsEnd program writes before it
// exits; ok is false when it exited (or was killed) without one.
func readEndReport(f *os.File) (code int, ok bool) {
	var buf []byte
	chunk := make([]byte, 8)
	for len(buf) < 8 {
		n, err := f.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if line, _, found := bytes.Cut(buf, []byte("\n")); found {
			code, err := strconv.Atoi(string(line))
			return code, err == nil && code >= 0 && code <= 255
		}
		if err != nil {
			break
		}
	}
	return 0, false
}

// Exited is closed when the leader has exited, or reported its end. Until
// Reap, its unreaped exit keeps its session and group ids from being
// reused.
func (p *proc) Exited() <-chan struct{} { return p.exited }

// Gone is closed once the leader has been reaped: by Reap, or in the
// background after it reported its end.
func (p *proc) Gone() <-chan struct{} { return p.gone }

// ExitCode is how the leader ended, as a shell reports it: its exit
// status, or 128+N when signal N killed it (signal is then N). Call it
// after Reap.
func (p *proc) ExitCode() (code int, signal syscall.Signal) {
	if p.reported {
		return p.reportedCode, 0
	}
	if p.state == nil {
		return -1, 0
	}
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal()
	}
	return p.state.ExitCode(), 0
}

// waitExit waits up to d, or until ctx ends, for the leader to exit, and
// reports whether it has.
func (p *proc) waitExit(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// stopResult is how a Stop went.
type stopResult int

const (
	nothingLeft   stopResult = iota // nothing of the session was running
	endedAtTERM                     // all of it ended within the grace period
	neededSIGKILL                   // something was still running after the grace period
)

// Stop ends the process and everything left in its session: SIGTERM (with
// SIGCONT, so a stopped process gets to act on it) to each, up to grace
// for all of them to be gone, then SIGKILL. A grace of 0 is SIGKILL at
// once. It returns when nothing of the session runs, or, if something
// will not die (a process stuck in the kernel), a second after the last
// new process turned up. After Reap it does nothing. Where /proc is
// missing (macOS) only the group is seen.
func (p *proc) Stop(grace time.Duration) stopResult {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.released || p.empty.Load() {
		return nothingLeft
	}
	esc := newEscalation(grace)
	var tick <-chan time.Time // made at the first wait: most stops end at the first look
	children.Lock()
	children.stopping[p.pid]++
	children.Unlock()
	defer func() {
		children.Lock()
		if children.stopping[p.pid]--; children.stopping[p.pid] == 0 {
			delete(children.stopping, p.pid)
		}
		children.Unlock()
		if (len(esc.seen) > 0 || len(esc.dead) > 0) && subreaper.Load() {
			reapOrphans() // what died meanwhile was left to this stop
		}
	}()
	exited := p.exited
	for {
		select {
		case <-p.exited:
			if p.empty.Load() || !p.signalSession(esc) {
				p.empty.Store(true)
				return esc.result
			}
		default:
			// The leader runs, so its group is there: signal it without
			// a look at /proc. The rest of the session is looked for once
			// the leader has exited.
			sendStop(-p.pid, esc.signal(-p.pid))
		}
		if esc.givenUp() {
			return esc.result
		}
		if tick == nil {
			ticker := time.NewTicker(stopTick)
			defer ticker.Stop()
			tick = ticker.C
		}
		select {
		case <-exited: // the leader's end is the usual one to wait for
			exited = nil
		case <-tick:
		}
	}
}

// signalSession sends what esc chooses to what is left of the session,
// and reports whether anything live is: first to what is in its cgroup,
// then, once nothing of the session is, to any process of the session
// found below zot (one that moved itself out of the cgroup, which only a
// command without the sandbox can). Without a cgroup the session is
// frozen with SIGSTOP (escalation.freezeAndKill); without /proc only its
// group is seen: kill(2) of a group skips zombies on macOS, so the
// unreaped leader does not count.
func (p *proc) signalSession(esc *escalation) (left bool) {
	// Either answer holds for good: a session found empty with its leader
	// unreaped gains nobody, and pids given out stay given out.
	switch p.after.Load() {
	case afterNothing:
		return false
	case afterUnread:
		if p.nothingStartedAfter() {
			p.after.Store(afterNothing)
			return false
		}
		p.after.Store(afterSomething)
	}
	if p.cg != nil && !p.cgDone.Load() {
		if left, ok := p.cg.stopSession(p.pid, esc, p.stopTarget); ok {
			if left {
				return true
			}
			p.cgDone.Store(true)
		}
	}
	if !hasProc() {
		if syscall.Kill(-p.pid, 0) == syscall.ESRCH {
			return false
		}
		sendStop(-p.pid, esc.signal(-p.pid))
		return true
	}
	return esc.stopFound(sessionProcs(p.pid, p.mark), p.stopTarget)
}

// nothingStartedAfter reports whether the system has given out no pid
// since the leader's, which has exited unreaped (so its pid cannot be
// given again): every other process of its session was started after it,
// with a pid of its own, so there is none, in its cgroup or out of it.
// /proc/loadavg names the last pid given in zot's PID namespace
// (readLoadavg); a process started anywhere on the system since, or a
// thread, makes it another, and the session is looked for as usual. It
// spares the look below zot (a /proc file for each of zot's threads) when
// a command started nothing, as most do.
func (p *proc) nothingStartedAfter() bool {
	if p.early {
		return false
	}
	last, _, ok := readLoadavg()
	return ok && last == p.pid
}

// What proc.after holds.
const (
	afterUnread int32 = iota
	afterNothing
	afterSomething
)

// stopTarget is where SIGTERM goes for s: the leader's group, which got
// it while the leader ran, or s alone, which left the group.
func (p *proc) stopTarget(s procStat) int {
	if s.pgrp == p.pid {
		return -p.pid
	}
	return s.pid
}

// hasProc reports whether there is a /proc to look at.
var hasProc = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
})

// Reap waits for the leader to exit, kills whatever its session left
// running, and releases the process; it returns how the leader ended, as
// exec.Cmd.Wait does. Later calls return the same. A leader that reported
// its end has left nothing running: Reap returns at once, with no state
// (ExitCode has the status), and the leader is reaped in the background.
func (p *proc) Reap() (*os.ProcessState, error) {
	<-p.exited
	if p.reported {
		return nil, nil
	}
	p.reapOnce.Do(func() {
		p.Stop(0)
		p.release()
	})
	return p.state, p.waitErr
}

// release reaps the leader, which has exited, and frees its ids.
func (p *proc) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.early {
		// Once more to the group, which a kill reaches at once whatever
		// it is doing: a process that forks and exits in a loop can slip
		// past a look at /proc.
		syscall.Kill(-p.pid, syscall.SIGKILL)
		p.waitErr = p.cmd.Wait()
		p.state = p.cmd.ProcessState
	}
	switch {
	case p.cg == nil:
	case p.after.Load() == afterNothing:
		p.cg.keep()
	default:
		p.cg.remove()
	}
	p.released = true
	children.Lock()
	delete(children.started, p.pid)
	askAgain := children.askAgain || !childrenFiles()
	children.askAgain = false
	children.Unlock()
	if subreaper.Load() && askAgain {
		reapOrphans() // the kernel may have named this one before an orphan
	}
	close(p.gone)
}

// procRun is what runToEnd kept of a process that ran to its end.
type procRun struct {
	stdout, stderr cappedBuffer // stderr stays empty when merged into stdout
	state          *os.ProcessState
	stopped        bool // ctx ended first and the session was killed
}

// runToEnd runs a short-lived command: input on its stdin, at most limit
// bytes kept of its stdout and of its stderr (or of both, merged, when
// spec.stderr is streamStdout). When ctx ends first the whole session is
// killed; when the process exits, whatever it left running is. What the
// process wrote is read until its pipes close, or for drain after it
// exited: a process that left the session may hold them open.
func runToEnd(ctx context.Context, spec procSpec, input []byte, limit int, drain time.Duration) (procRun, error) {
	spec.stdin, spec.stdout = streamPipe, streamPipe
	if spec.stderr != streamStdout {
		spec.stderr = streamPipe
	}
	p, err := startProc(spec)
	if err != nil {
		return procRun{}, err
	}
	r := procRun{stdout: cappedBuffer{max: limit}, stderr: cappedBuffer{max: limit}}
	var pipes sync.WaitGroup
	pipes.Add(1)
	// The feeder ends when the input is written or the pipe breaks (the
	// process exited without reading it, or the write deadline passed).
	go func() {
		defer pipes.Done()
		p.stdin.Write(input)
		p.stdin.Close()
	}()
	for _, s := range []struct {
		f   *os.File
		buf *cappedBuffer
	}{{p.stdout, &r.stdout}, {p.stderr, &r.stderr}} {
		if s.f == nil {
			continue
		}
		pipes.Add(1)
		// A reader ends at EOF or at its read deadline.
		go func() {
			defer pipes.Done()
			io.Copy(s.buf, s.f)
			s.f.Close()
		}()
	}
	select {
	case <-p.exited:
	case <-ctx.Done():
		r.stopped = true
		p.Stop(0)
	}
	r.state, _ = p.Reap()
	deadline := time.Now().Add(drain)
	for _, f := range []*os.File{p.stdin, p.stdout, p.stderr} {
		if f != nil {
			f.SetDeadline(deadline)
		}
	}
	pipes.Wait()
	return r, nil
}

// cappedBuffer keeps the first max bytes written to it and counts the rest
// away, so a chatty process never blocks on a full pipe nor fills memory.
type cappedBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.truncated = true
		c.buf.Write(p[:max(room, 0)])
	} else {
		c.buf.Write(p)
	}
	return len(p), nil
}

func (c *cappedBuffer) Bytes() []byte { return c.buf.Bytes() }

// children are the processes startProc started and Reap has not reaped.
// The orphan reaper leaves them to their owners. The lock is held across
// each start, so the reaper never sees a child of startProc's that is not
// in the table yet. stopping counts the Stops under way per session: the
// reaper leaves the session's dead orphans to them, so that a process
// that dies while a Stop looks is seen dead (see escalation.look), and
// Stop reaps them when it is done.
var children = struct {
	sync.Mutex
	started  map[int]bool
	stopping map[int]int
	askAgain bool // reapOrphans stopped at a started child: release asks again
}{started: map[int]bool{}, stopping: map[int]int{}}

// adoptOrphans makes zot the reaper of the orphans of every process it
// starts, where the system allows it (Linux: PR_SET_CHILD_SUBREAPER).
// Without it, a process that outlives its parent — a command's background
// job after the shell exited — is adopted by init and out of reach; with
// it, such a process is zot's child: found below zot, stopped at exit, and
// reaped as it exits (no zombies). It returns release, which stops every
// adopted orphan still running and what it started (SIGTERM, grace, then
// frozen and killed) and ends the reaper. It changes the whole process,
// so only main calls it.
func adoptOrphans(grace time.Duration) (release func()) {
	if setSubreaper() != nil {
		return func() {}
	}
	subreaper.Store(true)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	done, reaperDone := make(chan struct{}), make(chan struct{})
	// The reaper: reaps adopted orphans as they exit; ends at release.
	go func() {
		defer close(reaperDone)
		for {
			select {
			case <-sigs:
				reapOrphans()
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-reaperDone
		signal.Stop(sigs)
		if !startedAny.Load() {
			return // no child, so no descendant to have left an orphan
		}
		esc := newEscalation(grace)
		for stopOrphans(esc) && !esc.givenUp() {
			time.Sleep(stopTick)
		}
	}
}

// startedAny is set once startProc starts a process, the only way zot
// starts one: before that, there is nothing release could have adopted.
var startedAny atomic.Bool

// zotSession is zot's own session id.
var zotSession = sync.OnceValue(func() int {
	s, _ := readProcStat(strconv.Itoa(os.Getpid()))
	return s.sid
})

// orphans is the finder of zot's adopted orphans and, with below, of
// every process beneath them. An orphan is a child of zot that startProc
// did not start and that is not in zot's session: a child other code in
// this process started with os/exec (as tests do) shares zot's session
// and is left to its owner. Only zot's children are looked at, unless the
// kernel has no children files. Call it with children locked.
func orphans(below bool) finder {
	return func(visit func(procStat)) []procStat {
		self := os.Getpid()
		var kids []int
		var byParent map[int][]int // the fallback's whole tree, from one look at every process
		if childrenFiles() {
			kids = childrenOf("self")
		} else {
			all, _ := readProcs()
			byParent = map[int][]int{}
			for _, s := range all {
				byParent[s.ppid] = append(byParent[s.ppid], s.pid)
			}
			kids = byParent[self]
		}
		isOrphan := func(s procStat) bool { return s.ppid == self && s.sid != zotSession() && !children.started[s.pid] }
		var roots []int
		var procs []procStat
		for _, pid := range kids {
			if s, ok := readProcStat(strconv.Itoa(pid)); ok && isOrphan(s) {
				procs = append(procs, s)
				visit(s)
				if below && !s.zombie() {
					roots = append(roots, s.pid)
				}
			}
		}
		if len(roots) == 0 {
			return procs
		}
		all := func(procStat) bool { return true }
		if byParent == nil {
			var below []int
			for _, pid := range roots {
				below = append(below, childrenOf(strconv.Itoa(pid))...)
			}
			return append(procs, walkProcs(below, all, visit)...)
		}
		for queue := roots; len(queue) > 0; queue = queue[1:] {
			for _, pid := range byParent[queue[0]] {
				if s, ok := readProcStat(strconv.Itoa(pid)); ok {
					procs = append(procs, s)
					visit(s)
					if !s.zombie() {
						queue = append(queue, s.pid)
					}
				}
			}
		}
		return procs
	}
}

// reapOrphans reaps the adopted orphans that have exited, but those of a
// session a Stop is looking at (see children). An orphan is looked at
// with the table locked: a child of zot that is not in the table then is
// an orphan, since startProc holds the lock until its child is in it, and
// a child of zot keeps its pid until zot reaps it. It asks the kernel for
// an exited child first, which costs one call where reading the children
// files costs three per thread: when none has exited, which is most
// SIGCHLDs after the first, there is nothing to read. As the kernel names
// the first it finds, one that is startProc's own (its exit is usually
// the SIGCHLD) hides any behind it: release asks again once its owner
// has reaped it. Another that is not an orphan's (a child other code
// started and reaps) sends it to the children files, or, without them,
// leaves the rest to the next call.
func reapOrphans() {
	children.Lock()
	defer children.Unlock()
	self, session := os.Getpid(), zotSession()
	reap := func(s procStat) bool {
		if !s.zombie() || s.ppid != self || children.started[s.pid] || s.sid == session || children.stopping[s.sid] > 0 {
			return false
		}
		var ws syscall.WaitStatus
		syscall.Wait4(s.pid, &ws, syscall.WNOHANG, nil)
		return true
	}
	for pid := exitedChild(); pid > 0; pid = exitedChild() {
		if children.started[pid] {
			children.askAgain = true
			return
		}
		if s, ok := readProcStat(strconv.Itoa(pid)); ok && reap(s) {
			continue
		}
		if childrenFiles() {
			for _, s := range orphans(false)(func(procStat) {}) {
				reap(s)
			}
		}
		return
	}
}

// stopOrphans reaps the adopted orphans that have exited and sends what
// esc chooses to those still running — SIGTERM to each, and to its group
// when it leads one; after the grace period, SIGKILL to them and to
// everything beneath them, frozen first — and reports whether any is
// still running. The orphans' own children become zot's when they die,
// and are found on a later call.
func stopOrphans(esc *escalation) (running bool) {
	reapOrphans()
	target := func(s procStat) int {
		if s.pgrp == s.pid {
			return -s.pid
		}
		return s.pid
	}
	return esc.stopFound(orphans(esc.killing()), target)
}

// killGrace is how long a child is given to end after it was asked to
// (stdin closed, a shutdown frame, SIGTERM) before the next, harder step.
// killGraceEnv, a test knob read once, shortens it: the tests whose
// attacker ignores SIGTERM would otherwise watch it run (a fork loop
// burns a core) for the whole grace.
var killGrace = graceFromEnv(os.Getenv(killGraceEnv), 2*time.Second)

const killGraceEnv = "ZOT_KILL_GRACE"

// graceFromEnv is the duration v names, or def when v is empty or names
// none (or one longer than def: the knob only shortens).
func graceFromEnv(v string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(v); err == nil && d >= 0 && d < def {
		return d
	}
	return def
}

// lineChild is a child that speaks a line protocol on its stdin and
// stdout — an extension, an MCP server over stdio, the extension `zot ext
// check` examines. It is the one copy of their plumbing: start, one reader
// of stdout's lines (through untrusted.go's line reader, with the caller's
// bound and over-long policy), serialised writes, the stderr copier, the
// waiter that reaps, and stop with grace. What a line means, and which call
// a reply answers, is the protocol's; the lineChild hands it every line.
//
// Three goroutines serve it, all owned by the lineChild and started by
// startLineChild: the reader (ends at stdout's EOF or the drain deadline),
// the copier (stderr, the same) and the waiter (ends once the child is
// reaped). stop returns only when all three have ended.
type lineChild struct {
	proc   *proc
	stdin  *os.File
	stdout *os.File

	wmu       sync.Mutex // one writer at a time: lines never interleave
	stdinOnce sync.Once

	readerDone chan struct{}
	copierDone chan struct{}
	reaped     chan struct{} // closed once reaped; state and reapErr are set before
	gone       chan struct{} // closed when all three goroutines have ended
	state      *os.ProcessState
	reapErr    error
}

// lineChildIO is how a lineChild's streams are served.
type lineChildIO struct {
	maxLine  int
	overLong overLong
	// line gets each line, or a *lineTooLongError, from the one reader.
	line func(line []byte, err error)
	// ended is called by the reader after the last line, with the read
	// error that ended it (nil at EOF).
	ended func(err error)
	// stderr receives the child's stderr when its spec asks for a pipe.
	stderr io.Writer
	// exited is called by the waiter once the child is reaped, before
	// lineChild.reaped closes.
	exited func(*os.ProcessState)
	// drain is how long stdout and stderr are still read after the exit:
	// a process the child left may hold them open.
	drain time.Duration
	// leftovers, when set, is the grace what the child left running in its
	// session gets (SIGTERM, then SIGKILL) once the child exited; without
	// it they are killed at once.
	leftovers time.Duration
	// done is called by the waiter, last, once the child is reaped and
	// its reader and copier have ended, with the reap's error.
	done func(reapErr error)
}

// startLineChild starts spec's program (stdin and stdout pipes; stderr as
// spec says); serve then starts the goroutines that serve it, once the
// owner is ready for its lines.
func startLineChild(spec procSpec) (*lineChild, error) {
	p, err := startProc(spec)
	if err != nil {
		return nil, err
	}
	return &lineChild{proc: p, stdin: p.stdin, stdout: p.stdout,
		readerDone: make(chan struct{}), copierDone: make(chan struct{}), reaped: make(chan struct{}),
		gone: make(chan struct{})}, nil
}

// serve starts the reader, the copier and the waiter. Called once.
func (c *lineChild) serve(cio lineChildIO) {
	p := c.proc
	go func() {
		defer close(c.readerDone)
		defer c.stdout.Close()
		lr := newLineReader(c.stdout, cio.maxLine, cio.overLong)
		for {
			line, err := lr.next()
			if err != nil && !isLineTooLong(err) {
				if err == io.EOF {
					err = nil
				}
				if cio.ended != nil {
					cio.ended(err)
				}
				return
			}
			cio.line(line, err)
		}
	}()
	stderr := p.stderr
	go func() {
		defer close(c.copierDone)
		if stderr == nil {
			return
		}
		io.Copy(cio.stderr, stderr)
		stderr.Close()
	}()
	// The waiter. Reap kills what is left of the child's session first:
	// nothing it started outlives it.
	go func() {
		defer close(c.gone)
		if cio.leftovers > 0 {
			<-p.Exited()
			p.Stop(cio.leftovers)
		}
		c.state, c.reapErr = p.Reap()
		if cio.exited != nil {
			cio.exited(c.state)
		}
		close(c.reaped)
		deadline := time.Now().Add(cio.drain)
		c.stdout.SetReadDeadline(deadline)
		if stderr != nil {
			stderr.SetReadDeadline(deadline)
		}
		<-c.readerDone
		<-c.copierDone
		if cio.done != nil {
			cio.done(c.reapErr)
		}
	}()
}

// write sends one whole line (line ends in "\n"), giving up at deadline
// (none when zero). n is what was written: a line cut short leaves the
// child's stdin in the middle of a message.
func (c *lineChild) write(line []byte, deadline time.Time) (n int, err error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.stdin.SetWriteDeadline(deadline)
	return c.stdin.Write(line)
}

// closeStdin tells the child no more is coming; later writes fail, and a
// write blocked on a child that stopped reading returns.
func (c *lineChild) closeStdin() {
	c.stdinOnce.Do(func() { c.stdin.Close() })
}

// stop ends the child the polite way: up to grace for it to exit on its
// own (the caller has said goodbye, or closed stdin), then stdin closed and
// the stop sequence for its session (SIGTERM, up to term, SIGKILL). A ctx
// that ended skips the grace, and the SIGTERM's wait. late, when set, hears
// that the grace ran out. It returns once the child is reaped and the
// reader and copier have ended, with how the stop went (nothingLeft when
// it exited within grace).
func (c *lineChild) stop(ctx context.Context, grace, term time.Duration, late func()) stopResult {
	res := nothingLeft
	if !c.proc.waitExit(ctx, grace) {
		if late != nil {
			late()
		}
		c.closeStdin()
		if ctx.Err() != nil {
			term = 0
		}
		res = c.proc.Stop(term)
	}
	c.wait()
	return res
}

// wait returns once the child is reaped and the goroutines serving it
// have ended.
func (c *lineChild) wait() { <-c.gone }

// pidInUse says whether some process has pid: kill(2) with signal 0 does
// not answer ESRCH (a process of another user answers EPERM).
func pidInUse(pid int) bool {
	return syscall.Kill(pid, 0) != syscall.ESRCH
}

// devNull is /dev/null, opened once for reading: the stdin of every child
// that is given none. exec.Cmd would open it for each start.
var devNull = sync.OnceValues(func() (*os.File, error) {
	return openUnpolled(os.DevNull, os.O_RDONLY, 0)
})

// openUnpolled is os.OpenFile for a file the runtime's poller cannot
// watch (a regular file, a device like /dev/null): os.OpenFile tries to
// register every file it opens on Linux, and undoes that, four system
// calls more than the open.
func openUnpolled(name string, flag int, perm uint32) (*os.File, error) {
	fd, err := syscall.Open(name, flag|syscall.O_CLOEXEC, perm)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}
