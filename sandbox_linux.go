//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// On Linux the bash tool starts zot itself as a launcher (`zot __sandbox
// POLICY -- ARGV…`): Go cannot run code between fork and exec, so the
// launcher is the process that sets the sandbox up and then starts the
// command. It takes one of two paths:
//
//   - namespaces: zot starts the launcher in new user, mount, PID and IPC
//     namespaces (and a new network namespace in the offline modes), with
//     the user's own ids mapped. The launcher is PID 1 there: it makes the
//     mounts private, mounts a fresh /proc (zot is not in it) and an empty
//     read-only tmpfs over $ZOT_HOME, brings up the namespace's own
//     loopback, drops its capabilities, sets no_new_privs, applies
//     Landlock (read everything, write the writable set) and starts the
//     shell as its child. When the shell exits the launcher exits with its
//     status, and the kernel kills everything else in the namespace.
//   - landlock-only, where unprivileged user namespaces are not offered:
//     the launcher applies Landlock with a read allow-list built around
//     $ZOT_HOME, Landlock TCP rules (offline modes) and scoping against
//     signals and abstract unix sockets, and a seccomp filter (no setsid,
//     no io_uring, and in the offline modes no socket but AF_UNIX), then
//     execs the shell.
//
// Landlock, no_new_privs, seccomp and capabilities belong to a thread: the
// launcher locks its goroutine to its thread before touching them and
// starts the shell from that thread.

// Landlock's system calls and flags (include/uapi/linux/landlock.h).
const (
	sysLandlockCreateRuleset = 444
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446

	landlockCreateRulesetVersion = 1
	landlockRulePathBeneath      = 1
)

// Landlock file system access rights; each ABI adds some.
const (
	llExecute = 1 << iota
	llWriteFile
	llReadFile
	llReadDir
	llRemoveDir
	llRemoveFile
	llMakeChar
	llMakeDir
	llMakeReg
	llMakeSock
	llMakeFifo
	llMakeBlock
	llMakeSym
	llRefer    // ABI 2
	llTruncate // ABI 3
	llIoctlDev // ABI 5 (bit 15)
)

const (
	llNetBindTCP        = 1 << 0 // ABI 4
	llNetConnectTCP     = 1 << 1
	llScopeAbstractUnix = 1 << 0 // ABI 6
	llScopeSignal       = 1 << 1

	// llFileRights are the rights a rule on a file (not a directory) may
	// carry.
	llFileRights = llExecute | llWriteFile | llReadFile | llTruncate | llIoctlDev

	// landlockMinABI is the oldest ABI that can keep "write only the
	// writable set": before ABI 3 truncate(2) was not a handled right.
	landlockMinABI = 3
	// landlockNetABI is the first ABI with TCP rules.
	landlockNetABI = 4
)

// How the sandbox is set up (Sandbox.path).
const (
	pathNamespaces   = "namespaces"
	pathLandlockOnly = "landlock-only"
)

// sandboxSetupFailed is the launcher's exit status when it could not set
// the sandbox up; the command did not run.
const sandboxSetupFailed = 125

// launchPolicy is what zot passes the launcher: everything it needs to
// set the sandbox up.
type launchPolicy struct {
	Mode     sandboxMode `json:"mode"`
	Path     string      `json:"path"`
	ABI      int         `json:"abi"`
	Hidden   []string    `json:"hidden"`
	Writable []string    `json:"writable"`
	// Binds (namespaces path) are bound over themselves, read-only or
	// only pinned in place, those that exist, in this order.
	Binds []launchBind `json:"binds,omitempty"`
	// Probe: set everything up, then exit 0 without starting anything.
	Probe bool `json:"probe,omitempty"`
	// Wait: set everything up, then read the command (a JSON list of
	// words) from stdin, which becomes /dev/null for the command.
	Wait bool `json:"wait,omitempty"`
	// Report (namespaces path): fd 3 is a pipe to zot, which gets the
	// command's exit status there once nothing of it runs
	// (procSpec.reportsEnd).
	Report bool `json:"report,omitempty"`
}

// launchBind is a path bound over itself: read-only with what is beneath
// it, or writable and only pinned (a mount point is not renamed or
// removed).
type launchBind struct {
	Path     string `json:"path"`
	ReadOnly bool   `json:"ro,omitempty"`
}

// reportFd is the launcher's end of the pipe of launchPolicy.Report.
const reportFd = 3

// landlockABI is the newest Landlock ABI the kernel offers, 0 for none.
func landlockABI() int {
	r, _, errno := syscall.Syscall(sysLandlockCreateRuleset, 0, 0, landlockCreateRulesetVersion)
	if errno != 0 {
		return 0
	}
	return int(r)
}

// choosePath picks how this kernel enforces sb's mode — namespaces where
// they work, else Landlock and seccomp alone — and tries it for real, so
// that a mode zot accepts is one the kernel gives. It fails naming what is
// missing and what to do.
func (sb *Sandbox) choosePath(force string) error {
	sb.launcher = "/proc/self/exe"
	sb.abi = landlockABI()
	if force == "unavailable" {
		sb.abi = 0
	}
	switch {
	case sb.abi == 0:
		return fmt.Errorf("this kernel offers no Landlock (it needs Linux 6.2 or later with landlock in its lsm= list; %s); use --sandbox off", forceNote(force))
	case sb.abi < landlockMinABI:
		return fmt.Errorf("this kernel offers Landlock ABI %d; the sandbox needs ABI %d (Linux 6.2) to keep writes inside the writable directories; upgrade the kernel or use --sandbox off", sb.abi, landlockMinABI)
	}
	var nsErr error
	if force == "landlock-only" {
		nsErr = fmt.Errorf("not tried (%s=landlock-only)", sandboxForceEnv)
	} else {
		sb.path = pathNamespaces
		if nsErr = sb.probe(); nsErr == nil {
			return nil
		}
	}
	sb.path = pathLandlockOnly
	sb.why = fmt.Sprintf("user namespaces: %v", nsErr)
	if sb.mode.offline() && sb.abi < landlockNetABI {
		return fmt.Errorf("unprivileged user namespaces are not available (%v), and Landlock ABI %d cannot cut TCP (ABI %d, Linux 6.7, can); allow user namespaces (e.g. Ubuntu: an AppArmor profile for zot, or sysctl kernel.apparmor_restrict_unprivileged_userns=0), upgrade the kernel, or use --sandbox workspace", nsErr, sb.abi, landlockNetABI)
	}
	if _, ok := seccompArches[runtime.GOARCH]; !ok {
		return fmt.Errorf("unprivileged user namespaces are not available (%v), and zot has no seccomp filter for %s; allow user namespaces or use --sandbox off", nsErr, runtime.GOARCH)
	}
	if err := sb.probe(); err != nil {
		return fmt.Errorf("unprivileged user namespaces are not available (%v), and Landlock alone failed: %v", nsErr, err)
	}
	return nil
}

func forceNote(force string) string {
	if force == "unavailable" {
		return sandboxForceEnv + "=unavailable pretends so"
	}
	return "see zot sandbox check"
}

// policy is what the launcher needs for sb.
func (sb *Sandbox) policy() launchPolicy {
	pol := launchPolicy{Mode: sb.mode, Path: sb.path, ABI: sb.abi, Hidden: sb.hidden, Writable: sb.writable}
	if sb.path == pathNamespaces {
		// Sorted: a directory is bound before what lies in it, which its
		// recursive bind would otherwise cover.
		for _, gp := range sb.guard.paths {
			if gp.Bind != bindNone {
				pol.Binds = append(pol.Binds, launchBind{gp.Path, gp.Bind == bindReadOnly})
			}
		}
	}
	return pol
}

// confine turns spec into the launcher's command line, which sets the
// sandbox up and runs spec's program inside it.
func (sb *Sandbox) confine(spec procSpec) (procSpec, error) {
	return sb.launch(spec, sb.policy()), nil
}

// spareLauncher is a launcher started ahead of the next command: it sets
// the sandbox up and waits on its stdin for the command, so that a bash
// call does not wait for a zot process to start and build the sandbox —
// most of a call's cost. The next one is started once a command has
// ended: started alongside it, it would take the CPU from the command.
type spareLauncher struct {
	mu     sync.Mutex
	next   chan *proc // the spare once started (nil if it could not be); nil when none is coming
	spec   procSpec   // the command it was started for: its directory and streams
	closed bool
	// calls counts the launchers that took a command and are not reaped
	// yet (one that reported its end is reaped in the background).
	calls sync.WaitGroup
}

// Start starts spec's program in the sandbox: through the spare launcher
// when it was started for a command like spec, else through a launcher of
// its own. Once the command has ended it starts the spare for the next.
func (sb *Sandbox) Start(spec procSpec) (*proc, error) {
	s := &sb.spare
	s.mu.Lock()
	next := s.next
	if next != nil && sameShape(s.spec, spec) {
		s.next = nil
	} else {
		next = nil
	}
	s.calls.Add(1)
	s.mu.Unlock()
	before := sb.guard.begin()
	var p *proc
	if next != nil {
		if p = <-next; p != nil {
			if err := p.sendCommand(spec.argv); err != nil {
				discard(p) // it died: a launcher of the command's own says why
				p = nil
			}
		}
	}
	if p == nil {
		var err error
		if p, err = startProc(sb.launch(spec, sb.commandPolicy())); err != nil {
			s.calls.Done()
			return nil, err
		}
	}
	sb.guard.track(p, before)
	// The follower ends once the launcher is reaped, which its caller
	// (or, after a report, the watcher) sees to, and the next spare is
	// on its way.
	go func() {
		defer s.calls.Done()
		<-p.Gone()
		sb.startSpare(spec)
	}()
	return p, nil
}

// commandPolicy is the policy of a launcher that runs a command for Start:
// on the namespaces path it reports the command's end.
func (sb *Sandbox) commandPolicy() launchPolicy {
	pol := sb.policy()
	pol.Report = pol.Path == pathNamespaces
	return pol
}

// startSpare starts a launcher that waits for a command like spec, unless
// one is coming already or the sandbox is closed.
func (sb *Sandbox) startSpare(spec procSpec) {
	s := &sb.spare
	ch := make(chan *proc, 1)
	s.mu.Lock()
	if s.closed || s.next != nil {
		s.mu.Unlock()
		return
	}
	s.next, s.spec = ch, spec
	s.mu.Unlock()
	pol := sb.commandPolicy()
	pol.Wait = true
	spare := spec
	spare.argv, spare.stdin = nil, streamPipe
	// The starter ends once the launcher is started; Start or Close
	// takes what it sends.
	go func() {
		p, err := startProc(sb.launch(spare, pol))
		if err != nil {
			p = nil
		}
		ch <- p
	}()
}

// Close stops the spare launcher, starts no more, and waits until every
// launcher that ran a command is reaped.
func (sb *Sandbox) Close() error {
	s := &sb.spare
	s.mu.Lock()
	s.closed = true
	next := s.next
	s.next = nil
	s.mu.Unlock()
	if next != nil {
		if p := <-next; p != nil {
			discard(p)
		}
	}
	s.calls.Wait()
	sb.guard.close()
	return nil
}

// sameShape reports whether a launcher started for a can run b: the same
// directory, environment and streams.
func sameShape(a, b procSpec) bool {
	return a.dir == b.dir && a.env == b.env && len(a.addEnv) == 0 && len(b.addEnv) == 0 &&
		a.stdin == b.stdin && a.stdout == b.stdout && a.stderr == b.stderr && a.stderrFile == nil && b.stderrFile == nil
}

// sendCommand gives a waiting launcher its command.
func (p *proc) sendCommand(argv []string) error {
	_, err := p.stdin.Write([]byte(mustJSON(argv)))
	if cerr := p.stdin.Close(); err == nil {
		err = cerr
	}
	p.stdin = nil
	return err
}

// discard stops a launcher that will run nothing and releases it.
func discard(p *proc) {
	for _, f := range []*os.File{p.stdin, p.stdout, p.stderr} {
		if f != nil {
			f.Close()
		}
	}
	p.Stop(0)
	p.Reap()
}

func (sb *Sandbox) launch(spec procSpec, pol launchPolicy) procSpec {
	spec.argv = append([]string{sb.launcher, sandboxLauncherArg, mustJSON(pol), "--"}, spec.argv...)
	spec.reportsEnd = pol.Report
	// If zot dies, so does the launcher, and with it (PID 1) its namespace.
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if pol.Path == pathNamespaces {
		attr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC
		if pol.Mode.offline() {
			attr.Cloneflags |= syscall.CLONE_NEWNET
		}
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	}
	spec.sys = attr
	return spec
}

// probe runs the launcher once with sb's policy up to the point where it
// would start the command.
func (sb *Sandbox) probe() error {
	pol := sb.policy()
	pol.Probe = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	spec := sb.launch(procSpec{dir: "/", env: envNoSecrets, stderr: streamStdout}, pol)
	run, err := runToEnd(ctx, spec, nil, 4<<10, bashDrain)
	switch {
	case err != nil:
		return err
	case run.stopped:
		return errors.New("the trial launcher did not finish within 10s")
	case run.state.ExitCode() != 0:
		msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(run.stdout.Bytes())), "zot: sandbox: "))
		if msg == "" {
			msg = run.state.String()
		}
		return errors.New(msg)
	}
	return nil
}

// sandboxSystemReport says what this kernel offers the sandbox.
func sandboxSystemReport() string {
	var b strings.Builder
	var u syscall.Utsname
	syscall.Uname(&u)
	release := make([]byte, 0, len(u.Release))
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		release = append(release, byte(c))
	}
	fmt.Fprintf(&b, "system:   Linux %s (%s)\n", release, runtime.GOARCH)
	if abi := landlockABI(); abi > 0 {
		fmt.Fprintf(&b, "landlock: ABI %d (the sandbox needs %d; TCP rules from %d; signal and abstract-socket scoping from 6)\n", abi, landlockMinABI, landlockNetABI)
	} else {
		b.WriteString("landlock: not offered by this kernel\n")
	}
	if _, ok := seccompArches[runtime.GOARCH]; ok {
		fmt.Fprintf(&b, "seccomp:  filter for %s\n", runtime.GOARCH)
	} else {
		fmt.Fprintf(&b, "seccomp:  no filter for %s (the namespace-free path is not available)\n", runtime.GOARCH)
	}
	if f := os.Getenv(sandboxForceEnv); f != "" {
		fmt.Fprintf(&b, "forced:   %s=%s\n", sandboxForceEnv, f)
	}
	return b.String()
}

// runSandboxLauncher is `zot __sandbox POLICY -- ARGV…`: set the sandbox
// up, then run ARGV in it. Its exit status is the command's (128+N when a
// signal N ended it), or sandboxSetupFailed with the reason on stderr.
func runSandboxLauncher(args []string) int {
	// Never unlocked: this thread carries the restrictions, and the
	// command is started from it.
	runtime.LockOSThread()
	// The launcher allocates little and lives no longer than its command;
	// a collection would only take the CPU from the command (a spare that
	// just got ready would still be collecting what it set up with).
	debug.SetGCPercent(-1)
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "zot: sandbox: "+format+"\n", a...)
		return sandboxSetupFailed
	}
	var pol launchPolicy
	if len(args) < 2 || args[1] != "--" || json.Unmarshal([]byte(args[0]), &pol) != nil {
		return fail("the launcher needs POLICY -- COMMAND; it is started by zot's bash tool, not by hand")
	}
	argv := args[2:]
	report := -1
	if pol.Report {
		// A command that could write here would tell zot it ended while
		// it runs on.
		report = reportFd
		syscall.CloseOnExec(report)
	}
	if !pol.Probe && !pol.Wait && len(argv) == 0 {
		return fail("no command to run")
	}
	// A command must not read the launcher's memory (nor its policy
	// change): the launcher is not dumpable, and the command gets no
	// capability to override that.
	if err := forbidDumps(); err != nil {
		return fail("make the launcher non-dumpable: %v", err)
	}
	devNull, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fail("open /dev/null: %v", err)
	}
	if pol.Path == pathNamespaces {
		if err := setUpNamespaces(pol); err != nil {
			return fail("%v", err)
		}
		// Before the command comes: set up, it costs a spare's call nothing.
		forwardSignals()
	}
	if err := restrictThread(pol); err != nil {
		return fail("%v", err)
	}
	if pol.Probe {
		return 0
	}
	if pol.Wait {
		if argv, err = readCommand(); err != nil {
			return fail("%v", err)
		}
		if err := syscall.Dup3(devNull, 0, 0); err != nil {
			return fail("give the command an empty stdin: %v", err)
		}
	}
	syscall.Close(devNull)
	program, err := exec.LookPath(argv[0])
	if err != nil {
		return fail("%v", err)
	}
	if pol.Path == pathLandlockOnly {
		err := execInPlace(program, argv)
		return fail("start %s: %v", argv[0], err)
	}
	status, err := runAsInit(program, argv, report)
	if err != nil {
		return fail("%v", err)
	}
	return status
}

// readCommand reads the command a waiting launcher gets on stdin: a JSON
// list of words, then end of file. End of file alone means zot has no
// command for it after all.
func readCommand() ([]string, error) {
	const limit = 8 << 20 // well above what exec(2) takes
	var buf []byte
	chunk := make([]byte, 64<<10)
	for len(buf) <= limit {
		n, err := syscall.Read(0, chunk)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the command: %v", err)
		}
		if n == 0 {
			break
		}
		buf = append(buf, chunk[:n]...)
	}
	var argv []string
	if err := json.Unmarshal(buf, &argv); err != nil || len(argv) == 0 {
		return nil, errors.New("no command came")
	}
	return argv, nil
}

// setUpNamespaces prepares the launcher's fresh namespaces: private
// mounts, a /proc of this PID namespace only, $ZOT_HOME covered by an
// empty read-only tmpfs, and (offline) the loopback up.
func setUpNamespaces(pol launchPolicy) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount a fresh /proc: %w", err)
	}
	// Hidden[0] is $ZOT_HOME resolved; the other spelling is the same
	// directory. The directories leading to it inside a writable one
	// become mount points, which cannot be renamed or removed: a command
	// cannot move $ZOT_HOME aside and put one of its making in its place.
	// They are bound first, with what is beneath them, so that no bind
	// covers the tmpfs.
	home := pol.Hidden[0]
	for _, dir := range pathsBetween(pol.Writable, home) {
		if err := syscall.Mount(dir, dir, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("pin %s, on the way to $ZOT_HOME: %w", dir, err)
		}
	}
	if err := syscall.Mount("tmpfs", home, "tmpfs", syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "size=4k,mode=000"); err != nil {
		return fmt.Errorf("hide $ZOT_HOME %s: %w", home, err)
	}
	for _, b := range pol.Binds {
		if err := bindOver(b.Path, b.ReadOnly); err != nil {
			return fmt.Errorf("keep %s in place: %w", b.Path, err)
		}
	}
	// The working directory was entered before the mounts: a mount made
	// over a directory above it (a pin) leaves it in the tree beneath, where
	// a read-only bind made after the pin is not. Entering it again by
	// name puts it under every mount.
	if wd, err := os.Getwd(); err == nil {
		if err := syscall.Chdir(wd); err != nil {
			return fmt.Errorf("enter %s again after the mounts: %w", wd, err)
		}
	}
	if pol.Mode.offline() {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bring up the loopback of the new network namespace: %w", err)
		}
	}
	return nil
}

// bindOver binds path (a file or a directory, if it exists) over itself:
// a mount point cannot be renamed or removed. readOnly makes that mount
// read-only: nothing beneath it can be written. The remount keeps the
// flags the kernel locks on a mount inherited from another user
// namespace.
func bindOver(path string, readOnly bool) error {
	if _, err := os.Lstat(path); err != nil {
		return nil // made later: the guard after the command covers it
	}
	if err := syscall.Mount(path, path, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil || !readOnly {
		return err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return err
	}
	const stRelatime = 4096
	flags := uintptr(syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_RDONLY)
	// statfs's ST_* bits, and the MS_* flag each stands for.
	for bit, ms := range map[int64]uintptr{
		2: syscall.MS_NOSUID, 4: syscall.MS_NODEV, 8: syscall.MS_NOEXEC,
		1024: syscall.MS_NOATIME, 2048: syscall.MS_NODIRATIME, stRelatime: syscall.MS_RELATIME,
	} {
		if int64(st.Flags)&bit != 0 {
			flags |= ms
		}
	}
	return syscall.Mount("", path, "", flags, "")
}

// pathsBetween lists, outermost first, the directories on the way to
// target that lie beneath one of dirs (not the dirs themselves, nor
// target).
func pathsBetween(dirs []string, target string) []string {
	var out []string
	for dir := filepath.Dir(target); dir != target && dir != "/"; dir, target = filepath.Dir(dir), dir {
		for _, d := range dirs {
			if dir != d && withinDir(dir, d) {
				out = append([]string{dir}, out...)
				break
			}
		}
	}
	return out
}

// loopbackUp sets lo up (SIOCSIFFLAGS): a fresh network namespace has it
// down.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var ifr [40]byte // struct ifreq: the name, then a union whose first member is the flags
	copy(ifr[:], "lo")
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return errno
	}
	flags := (*uint16)(unsafe.Pointer(&ifr[16]))
	*flags |= syscall.IFF_UP | syscall.IFF_RUNNING
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return errno
	}
	return nil
}

// restrictThread confines the calling thread, and so every process
// started from it: no capabilities now or after any exec (bounding,
// ambient and inheritable sets emptied), no_new_privs (setuid bits and
// file capabilities give nothing), Landlock, and on the namespace-free
// path the seccomp filter. None of it can be undone.
func restrictThread(pol launchPolicy) error {
	const (
		prCapbsetDrop        = 24
		prCapAmbient         = 47
		prCapAmbientClearAll = 4
		prSetNoNewPrivs      = 38
	)
	// Without CAP_SETPCAP (an ordinary user on the namespace-free path)
	// the drop fails, and there is no capability to drop either.
	for c := uintptr(0); c < 64; c++ {
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prCapbsetDrop, c, 0); errno != 0 {
			break
		}
	}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClearAll, 0, 0, 0, 0); errno != 0 && errno != syscall.EINVAL {
		return fmt.Errorf("clear the ambient capabilities: %w", errno)
	}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); errno != 0 {
		return fmt.Errorf("set no_new_privs: %w", errno)
	}
	if err := applyLandlock(pol); err != nil {
		return err
	}
	if pol.Path == pathLandlockOnly {
		if err := installSeccomp(pol.Mode.offline()); err != nil {
			return err
		}
	}
	// The launcher's own capabilities (it owns its user namespace) go
	// last, after the mounts and the ruleset needed them.
	type capHeader struct {
		version uint32
		pid     int32
	}
	type capData struct{ effective, permitted, inheritable uint32 }
	hdr := capHeader{version: 0x20080522} // _LINUX_CAPABILITY_VERSION_3
	var data [2]capData
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return fmt.Errorf("drop capabilities: %w", errno)
	}
	return nil
}

// applyLandlock restricts the calling thread to pol: read and execute
// everywhere but $ZOT_HOME, write only beneath the writable set (and to
// the harmless devices), and on the namespace-free path no TCP and no
// abstract unix sockets (offline modes) and no signals to processes
// outside the sandbox. It uses only rights pol.ABI knows.
func applyLandlock(pol launchPolicy) error {
	read := uint64(llExecute | llReadFile | llReadDir)
	write := uint64(llWriteFile | llRemoveDir | llRemoveFile | llMakeChar | llMakeDir | llMakeReg | llMakeSock | llMakeFifo | llMakeBlock | llMakeSym)
	if pol.ABI >= 2 {
		write |= llRefer
	}
	if pol.ABI >= 3 {
		write |= llTruncate
	}
	device := uint64(llWriteFile | llTruncate)
	attr := struct{ fs, net, scoped uint64 }{fs: read | write}
	if pol.ABI >= 5 {
		attr.fs |= llIoctlDev
		device |= llIoctlDev
	}
	size := 8
	if pol.Path == pathLandlockOnly {
		if pol.ABI >= landlockNetABI {
			size = 16
			if pol.Mode.offline() {
				attr.net = llNetBindTCP | llNetConnectTCP // and no rule allows a port
			}
		}
		if pol.ABI >= 6 {
			size = 24
			attr.scoped = llScopeSignal
			if pol.Mode.offline() {
				attr.scoped |= llScopeAbstractUnix
			}
		}
	}
	fd, _, errno := syscall.Syscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(&attr)), uintptr(size), 0)
	if errno != 0 {
		return fmt.Errorf("create the Landlock ruleset (ABI %d): %w", pol.ABI, errno)
	}
	defer syscall.Close(int(fd))
	add := func(path string, access uint64) error { return landlockAllow(int(fd), path, access) }

	if pol.Path == pathNamespaces {
		// $ZOT_HOME is under a tmpfs, so reading everything reads nothing of it.
		if err := add("/", read); err != nil {
			return err
		}
	} else {
		// Names can be listed everywhere, contents read everywhere but
		// in $ZOT_HOME.
		if err := add("/", llReadDir); err != nil {
			return err
		}
		if err := allowAround("/", pol.Hidden, llReadFile|llExecute, add); err != nil {
			return err
		}
	}
	// Where $ZOT_HOME lies inside a writable directory, the directories
	// leading to it must not be renamed and replaced with a $ZOT_HOME of
	// the command's making. Without namespaces, writes go around them;
	// with namespaces, they are mount points (setUpNamespaces), and only
	// the other spelling of $ZOT_HOME (through a symlink) needs the way
	// around.
	around := pol.Hidden
	if pol.Path == pathNamespaces {
		around = pol.Hidden[1:]
	}
	for _, w := range pol.Writable {
		if err := allowAround(w, around, write, add); err != nil {
			return err
		}
	}
	for _, dev := range writableDevices {
		if _, err := os.Stat(dev); err == nil {
			if err := add(dev, device); err != nil {
				return err
			}
		}
	}
	if _, _, errno := syscall.Syscall(sysLandlockRestrictSelf, fd, 0, 0); errno != 0 {
		return fmt.Errorf("enforce the Landlock ruleset: %w", errno)
	}
	return nil
}

// allowAround grants access beneath root, except beneath the hidden paths
// and to the directories leading from root to them: there it grants each
// entry beside the way instead. Symbolic links get no rule of their own
// (what they point to has its rules). An entry that cannot be opened is
// left without a rule: it is denied, never wrongly allowed.
func allowAround(root string, hidden []string, access uint64, add func(string, uint64) error) error {
	leadsToHidden := false
	for _, h := range hidden {
		if h == root {
			return nil
		}
		if withinDir(h, root) {
			leadsToHidden = true
		}
	}
	if !leadsToHidden {
		return add(root, access)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 {
			continue
		}
		if err := allowAround(filepath.Join(root, e.Name()), hidden, access, add); err != nil {
			return err
		}
	}
	return nil
}

// landlockAllow adds a rule granting access beneath path (or to path, a
// file) to the ruleset fd. A path that vanished or cannot be opened gets
// no rule.
func landlockAllow(ruleset int, path string, access uint64) error {
	const oPath = 0x200000 // O_PATH: a handle on the file, not opened for reading
	fd, err := syscall.Open(path, oPath|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		access &= llFileRights
	}
	// struct landlock_path_beneath_attr is packed: 8 + 4 bytes, which is
	// how this struct begins.
	rule := struct {
		allowed  uint64
		parentFd int32
	}{access, int32(fd)}
	if _, _, errno := syscall.Syscall6(sysLandlockAddRule, uintptr(ruleset), landlockRulePathBeneath, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("add a Landlock rule for %s: %w", path, errno)
	}
	return nil
}

// seccompArches are the architectures zot has a seccomp filter for: the
// audit arch of their native system calls and the numbers the filter
// refuses.
var seccompArches = map[string]struct {
	audit          uint32
	socket, setsid uint32
	x32            bool // amd64: refuse the x32 numbering too
}{
	"amd64":   {0xC000003E, 41, 112, true},
	"arm64":   {0xC00000B7, 198, 157, false},
	"riscv64": {0xC00000F3, 198, 157, false},
}

// installSeccomp installs the namespace-free path's filter on the calling
// thread: setsid fails (every process stays in the session the bash tool
// stops), io_uring is missing (it could open sockets past the filter),
// a system call of another architecture kills the process (its numbers
// mean other calls), and in the offline modes socket() works only for
// AF_UNIX.
func installSeccomp(offline bool) error {
	const (
		ldAbsW   = 0x20 // BPF_LD | BPF_W | BPF_ABS
		jeqK     = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
		jgeK     = 0x35 // BPF_JMP | BPF_JGE | BPF_K
		retK     = 0x06 // BPF_RET | BPF_K
		retAllow = 0x7fff0000
		retKill  = 0x80000000 // SECCOMP_RET_KILL_PROCESS
		retErrno = 0x00050000

		offNr, offArch, offArg0 = 0, 4, 16 // struct seccomp_data, little-endian low half of args[0]
		ioUringSetup            = 425      // the same number on every architecture
		prSetSeccomp            = 22
		seccompModeFilter       = 2
	)
	arch, ok := seccompArches[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	type insn struct {
		code   uint16
		jt, jf uint8
		k      uint32
	}
	prog := []insn{
		{ldAbsW, 0, 0, offArch},
		{jeqK, 1, 0, arch.audit},
		{retK, 0, 0, retKill},
		{ldAbsW, 0, 0, offNr},
	}
	if arch.x32 {
		prog = append(prog, insn{jgeK, 0, 1, 0x40000000}, insn{retK, 0, 0, retKill})
	}
	prog = append(prog,
		insn{jeqK, 0, 1, arch.setsid}, insn{retK, 0, 0, retErrno | uint32(syscall.EPERM)},
		insn{jeqK, 0, 1, ioUringSetup}, insn{retK, 0, 0, retErrno | uint32(syscall.ENOSYS)},
	)
	if offline {
		prog = append(prog,
			insn{jeqK, 0, 3, arch.socket},
			insn{ldAbsW, 0, 0, offArg0},
			insn{jeqK, 1, 0, syscall.AF_UNIX},
			insn{retK, 0, 0, retErrno | uint32(syscall.EACCES)},
		)
	}
	prog = append(prog, insn{retK, 0, 0, retAllow})
	fprog := struct {
		len    uint16
		filter *insn
	}{uint16(len(prog)), &prog[0]}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("install the seccomp filter: %w", errno)
	}
	runtime.KeepAlive(prog)
	return nil
}

// statIDs are a file's device, inode and change time: what a command
// cannot set back after writing it.
func statIDs(st fs.FileInfo) (dev, ino uint64, ctime int64) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Dev), s.Ino, s.Ctim.Nano()
	}
	return 0, 0, 0
}

// openDirHandle opens a handle on a directory (O_PATH: not for reading)
// that follows it through renames.
func openDirHandle(path string) (*os.File, error) {
	const oPath = 0x200000
	return openUnpolled(path, oPath|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
}

// handlePath is where the directory of a handle is now; "" when it was
// removed or cannot be told.
func handlePath(f *os.File) string {
	p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil || !filepath.IsAbs(p) || strings.HasSuffix(p, " (deleted)") {
		return ""
	}
	return p
}
