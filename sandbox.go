package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The sandbox confines the model's commands (the bash tool) and its file
// tools to what a mode allows, with the kernel enforcing it: Landlock and
// namespaces on Linux (sandbox_linux.go), Seatbelt on macOS
// (sandbox_darwin.go). This file holds what every system shares: the
// modes, the writable set, the checks of write and edit, the notes on
// refused commands, `zot sandbox check` and the Seatbelt profile text.
//
// A mode the system cannot give is refused when zot starts; zot never
// runs a command less confined than the user asked.

// sandboxMode is what commands may do.
type sandboxMode string

const (
	sandboxOff              sandboxMode = "off"               // no sandbox: what the user can do
	sandboxWorkspace        sandboxMode = "workspace"         // write the working directory, temp and sandbox_writable; network
	sandboxWorkspaceOffline sandboxMode = "workspace-offline" // workspace without network
	sandboxReadOnly         sandboxMode = "read-only"         // write only the temp directory; no network
)

// sandboxModes are the modes in the order docs and messages list them.
var sandboxModes = []sandboxMode{sandboxOff, sandboxWorkspace, sandboxWorkspaceOffline, sandboxReadOnly}

func parseSandboxMode(s string) (sandboxMode, error) {
	for _, m := range sandboxModes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown sandbox mode %q (want off, workspace, workspace-offline or read-only)", s)
}

// offline says whether the mode cuts the network.
func (m sandboxMode) offline() bool { return m == sandboxWorkspaceOffline || m == sandboxReadOnly }

// Hidden arguments: zot started as its own sandbox launcher, and as the
// self-test program `zot sandbox check` runs inside a sandbox. main
// dispatches them before anything else; help does not list them.
const (
	sandboxLauncherArg = "__sandbox"
	sandboxSelfTestArg = "__sandbox-selftest"
)

// sandboxForceEnv is a test knob read only by zot's own start-up:
// "landlock-only" forces the namespace-free path where namespaces would
// be used, "unavailable" makes the probe find no sandbox at all (to test
// refusal). docs/sandbox.md lists it.
const sandboxForceEnv = "ZOT_SANDBOX_FORCE"

// Sandbox is one mode, resolved for one working directory: the paths
// commands may write, the paths they may not see, and how the system
// enforces it. It satisfies the tools' CommandSandbox.
type Sandbox struct {
	mode sandboxMode
	// writable are the directories (symlinks resolved) commands may write
	// beneath, and the file tools too.
	writable []string
	// hidden are $ZOT_HOME as written and as resolved: nothing beneath
	// them can be read or written from inside, nor can they be replaced.
	hidden []string
	// guarded are the paths of sandboxConfig.Guard that lie in the
	// writable set (symlinks resolved), whether they exist or not; guard
	// checks them around each command (sandbox_guard.go).
	guarded []guardedPath
	guard   *sandboxGuard
	home    string // $ZOT_HOME as the user knows it, for messages
	cwd     string
	// path is how the system enforces the mode ("namespaces",
	// "landlock-only", "seatbelt"), and why when it is not the first
	// choice.
	path, why string
	// abi is the Landlock ABI in use (Linux).
	abi int
	// launcher is the program that sets the sandbox up and starts the
	// command (Linux: zot itself).
	launcher string
	// spare is a launcher started ahead for the next command (Linux).
	spare spareLauncher
}

// sandboxSettings are the sandbox's lines in $ZOT_HOME/config.json.
type sandboxSettings struct {
	Mode     string   `json:"sandbox"`
	Writable []string `json:"sandbox_writable"`
}

// loadSandboxSettings reads "sandbox" and "sandbox_writable" from
// config.json, "~/" expanded. A file that exists but cannot be read is an
// error: zot cannot tell whether a sandbox was asked for, and running
// without one would fail open.
func loadSandboxSettings(home string) (sandboxSettings, error) {
	var s sandboxSettings
	path := filepath.Join(home, "config.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		return s, fmt.Errorf("read %s: %v; zot cannot tell whether it asks for a sandbox: fix the file, or pass --sandbox MODE", path, err)
	}
	userHome, _ := os.UserHomeDir()
	for i, p := range s.Writable {
		if rest, ok := strings.CutPrefix(p, "~/"); ok && userHome != "" {
			s.Writable[i] = filepath.Join(userHome, rest)
		} else if p == "~" && userHome != "" {
			s.Writable[i] = userHome
		}
		if !filepath.IsAbs(s.Writable[i]) {
			return s, fmt.Errorf("read %s: \"sandbox_writable\" entry %q is not an absolute path (or ~/…)", path, p)
		}
	}
	return s, nil
}

// sandboxFromSettings builds the sandbox the user asked for: --sandbox
// (flag, "" when not given) wins over "sandbox" in config.json. A mode
// that cannot be had is an error: a usage error for the flag. guarded
// are the paths programs outside the sandbox read or run
// (sandboxConfig.Guard).
func sandboxFromSettings(flag, cwd, home string, guarded []guardedPath) (*Sandbox, []string, error) {
	settings, cfgErr := loadSandboxSettings(home)
	if flag == "" && cfgErr != nil {
		return nil, nil, cfgErr
	}
	var notes []string
	if cfgErr != nil {
		notes = append(notes, fmt.Sprintf("%v (sandbox_writable left out)", cfgErr))
	}
	mode, err := parseSandboxMode(flag)
	if flag == "" && settings.Mode != "" {
		if mode, err = parseSandboxMode(settings.Mode); err != nil {
			return nil, nil, fmt.Errorf("%s: \"sandbox\": %v", filepath.Join(home, "config.json"), err)
		}
	} else if flag == "" {
		mode, err = sandboxOff, nil
	}
	if err != nil {
		return nil, nil, usageError{err.Error()}
	}
	sb, more, err := newSandbox(sandboxConfig{Mode: mode, Cwd: cwd, Home: home, Temp: os.TempDir(), Writable: settings.Writable, Guard: guarded, Force: os.Getenv(sandboxForceEnv)})
	switch {
	case err != nil && flag != "":
		return nil, nil, usageError{err.Error()}
	case err != nil:
		return nil, nil, fmt.Errorf("%v (asked for by \"sandbox\" in %s)", err, filepath.Join(home, "config.json"))
	}
	return sb, append(notes, more...), nil
}

// sandboxConfig is what a sandbox is made from.
type sandboxConfig struct {
	Mode     sandboxMode
	Cwd      string   // the working directory: writable but in read-only mode
	Home     string   // $ZOT_HOME: hidden
	Temp     string   // the temp directory: writable
	Writable []string // sandbox_writable
	// Guard are paths that configure or are run by programs outside the
	// sandbox (the project's .zot/, .claude/, .mcp.json, git's directory,
	// the rule files, the scripts its programs name): those inside the
	// writable set stay as they are for commands (sandbox_guard.go) and
	// are refused to write and edit.
	Guard []guardedPath
	Force string // ZOT_SANDBOX_FORCE (see sandboxForceEnv)
}

// newSandbox resolves a mode: the writable set is the working directory,
// the temp directory and sandbox_writable (read-only: the temp directory
// alone), and $ZOT_HOME (created if missing) is hidden. It probes the
// system and returns an error naming what is missing when the mode cannot
// be had; nil and no error for off. notes are things the user should
// know (an entry of sandbox_writable that does not exist, and so was left
// out).
func newSandbox(c sandboxConfig) (sb *Sandbox, notes []string, err error) {
	mode, home, extra := c.Mode, c.Home, c.Writable
	if mode == sandboxOff || mode == "" {
		return nil, nil, nil
	}
	sb = &Sandbox{mode: mode, home: home, cwd: c.Cwd}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, nil, fmt.Errorf("sandbox %s: create $ZOT_HOME %s to hide it: %w", mode, home, err)
	}
	lexical, _ := filepath.Abs(home)
	realHome, err := filepath.EvalSymlinks(lexical)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox %s: resolve $ZOT_HOME %s: %w", mode, home, err)
	}
	sb.hidden = []string{realHome}
	if lexical != realHome {
		sb.hidden = append(sb.hidden, lexical)
	}
	dirs := []string{c.Temp}
	if mode != sandboxReadOnly {
		dirs = append([]string{c.Cwd}, append(dirs, extra...)...)
	}
	for i, d := range dirs {
		real, err := filepath.EvalSymlinks(d)
		if err == nil {
			var st fs.FileInfo
			if st, err = os.Stat(real); err == nil && !st.IsDir() {
				err = errors.New("not a directory")
			}
		}
		if err != nil {
			// The working and temp directories were checked before; a
			// sandbox_writable entry may name a cache not made yet.
			if i < len(dirs)-len(extra) || mode == sandboxReadOnly {
				return nil, nil, fmt.Errorf("sandbox %s: writable directory %s: %w", mode, d, err)
			}
			notes = append(notes, fmt.Sprintf("sandbox: sandbox_writable entry %s is left out: %v (create it and restart zot)", d, err))
			continue
		}
		for _, h := range sb.hidden {
			if withinDir(real, h) {
				return nil, nil, fmt.Errorf("sandbox %s: writable directory %s is inside $ZOT_HOME (%s), which the sandbox hides from commands; run zot elsewhere or set ZOT_HOME to another directory", mode, d, home)
			}
		}
		sb.writable = appendUnique(sb.writable, real)
	}
	for _, gp := range c.Guard {
		// The directory resolved, not the path itself: a guarded link
		// (.git pointing elsewhere) is guarded as the link it is.
		dir, err := followPath(filepath.Dir(filepath.Clean(gp.Path)))
		if real := filepath.Join(dir, filepath.Base(gp.Path)); err == nil && sb.isWritable(real) {
			gp.Path = real
			sb.guarded = append(sb.guarded, gp)
		}
	}
	sb.guard = newSandboxGuard(sb.guarded, sb.isWritable)
	if err := sb.choosePath(c.Force); err != nil {
		return nil, nil, fmt.Errorf("sandbox %s is not available here: %w", mode, err)
	}
	if sb.path == "landlock-only" {
		for _, w := range sb.writable {
			if w != realHome && withinDir(realHome, w) {
				notes = append(notes, fmt.Sprintf("sandbox: $ZOT_HOME (%s) lies inside the writable directory %s, and without user namespaces commands cannot create or remove entries directly in the directories leading to it; set ZOT_HOME elsewhere to avoid this", home, w))
			}
		}
	}
	return sb, notes, nil
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// Mode is the sandbox's mode; a nil sandbox is off.
func (sb *Sandbox) Mode() sandboxMode {
	if sb == nil {
		return sandboxOff
	}
	return sb.mode
}

// Path says how the system enforces the mode.
func (sb *Sandbox) Path() string { return sb.path }

// WritableDirs are the directories commands may write beneath (symlinks
// resolved); nil for a nil sandbox.
func (sb *Sandbox) WritableDirs() []string {
	if sb == nil {
		return nil
	}
	return append([]string(nil), sb.writable...)
}

func (sb *Sandbox) isHidden(real string) bool {
	for _, h := range sb.hidden {
		if withinDir(real, h) {
			return true
		}
	}
	return false
}

func (sb *Sandbox) isWritable(real string) bool {
	if sb.isHidden(real) {
		return false
	}
	for _, w := range sb.writable {
		if withinDir(real, w) {
			return true
		}
	}
	return false
}

// Hidden are $ZOT_HOME as written and as resolved.
func (sb *Sandbox) Hidden() []string { return sb.hidden }

// CheckRead refuses the read tool what commands cannot read: $ZOT_HOME.
// real is the path with its symlinks resolved.
func (sb *Sandbox) CheckRead(real string) error {
	if sb.isHidden(real) {
		return fmt.Errorf("%s is in $ZOT_HOME (%s), which holds zot's keys and is hidden in every sandbox mode (sandbox %s; only --sandbox off opens it)", real, sb.home, sb.mode)
	}
	return nil
}

// CheckWrite refuses write and edit a path commands could not write
// either, and the paths kept read-only (whether commands can write them
// or not: see docs/sandbox.md). real is the path with its symlinks
// resolved.
func (sb *Sandbox) CheckWrite(real string) error {
	if err := sb.CheckRead(real); err != nil {
		return err
	}
	if !sb.isWritable(real) {
		return fmt.Errorf("%s is outside the directories the sandbox lets zot write (sandbox %s: %s); %s", real, sb.mode, strings.Join(sb.writable, ", "), sb.widenHint())
	}
	if p := guardCovers(sb.guarded, real); p != "" {
		return fmt.Errorf("%s is read-only in the sandbox (sandbox %s): %s configures or is run by programs that run outside it (validators, hooks, MCP servers, extensions, git, the permission rules); change it yourself, or run zot with --sandbox off", real, sb.mode, p)
	}
	return nil
}

// After checks what the command started as p changed of the guarded
// paths, puts it back, and returns a note for the command's result ("" when
// nothing). Call it once nothing of the command runs any more.
func (sb *Sandbox) After(p *proc) string { return sb.guard.end(p) }

// widenHint names the setting that would let a write through.
func (sb *Sandbox) widenHint() string {
	if sb.mode == sandboxReadOnly {
		return "in read-only mode only the temp directory is writable; --sandbox workspace (or \"sandbox\": \"workspace\" in $ZOT_HOME/config.json) adds the working directory"
	}
	return "to allow a directory, add it to \"sandbox_writable\" in $ZOT_HOME/config.json and restart zot"
}

// Phrases of a refused file access and of an unreachable network, as
// programs print them (strerror, Go, curl, getaddrinfo); compared in
// lower case.
var (
	deniedPhrases = []string{"permission denied", "read-only file system", "operation not permitted", "no such file or directory"}
	netPhrases    = []string{"network is unreachable", "connection refused", "could not resolve host", "temporary failure in name resolution",
		"name or service not known", "address family not supported", "no address associated with hostname", "could not connect", "failed to connect"}
)

// Explain returns a note for the output of a command that failed: that
// the sandbox refused a path outside the writable set, or $ZOT_HOME, or
// (offline modes) the network, and which setting would allow it; "" when
// the output shows none of these. outside says that a run outside the
// sandbox might do what was refused: a write outside the writable set or
// the network, never $ZOT_HOME, which no approval opens.
func (sb *Sandbox) Explain(output string) (note string, outside bool) {
	var notes []string
	hidden := false
	seen := map[string]bool{}
	add := func(note string) {
		if !seen[note] {
			seen[note] = true
			notes = append(notes, note)
		}
	}
	for _, line := range strings.Split(output, "\n") {
		lower := strings.ToLower(line)
		if sb.mode.offline() && containsAny(lower, netPhrases) {
			outside = true
			add(fmt.Sprintf("[sandbox %s: commands have no network, not even the host's loopback services (only a loopback of their own); --sandbox workspace (or \"sandbox\": \"workspace\" in $ZOT_HOME/config.json) gives them the network]", sb.mode))
			continue
		}
		at := firstIndex(lower, deniedPhrases)
		if at < 0 {
			continue
		}
		for _, p := range pathsIn(line[:at]) {
			if !filepath.IsAbs(p) {
				p = filepath.Join(sb.cwd, p)
			}
			real, err := followPath(filepath.Clean(p))
			if err != nil {
				continue
			}
			switch {
			case sb.isHidden(real):
				hidden = true
				add(fmt.Sprintf("[sandbox %s: %s is in $ZOT_HOME, which holds zot's keys and is hidden from commands in every sandbox mode; only --sandbox off opens it]", sb.mode, p))
			case !sb.isWritable(real) && !strings.Contains(lower, "no such file"):
				outside = true
				add(fmt.Sprintf("[sandbox %s refused this: %s is outside the writable directories (%s); %s]", sb.mode, p, strings.Join(sb.writable, ", "), sb.widenHint()))
			}
		}
	}
	return strings.Join(notes, "\n"), outside && !hidden
}

func containsAny(s string, phrases []string) bool { return firstIndex(s, phrases) >= 0 }

func firstIndex(s string, phrases []string) int {
	first := -1
	for _, p := range phrases {
		if i := strings.Index(s, p); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	return first
}

// pathsIn picks the words of an error message before its reason that
// name a path: those with a slash, and the last word (`touch: cannot
// touch 'x': Permission denied`, `sh: 1: cannot create x: Permission
// denied`), stripped of quotes and colons.
func pathsIn(s string) []string {
	words := strings.Fields(s)
	var out []string
	for i, w := range words {
		w = strings.Trim(w, "'\"‘’“”`:,;()[]<>")
		if w != "" && (strings.Contains(w, "/") || i == len(words)-1) {
			out = append(out, w)
		}
	}
	return out
}

// runSandboxCommand is `zot sandbox check`: what the system offers, which
// path each mode would take, and a self-test of each mode in a real
// sandboxed shell. It exits 0 when every mode the system offers passed.
func runSandboxCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || args[0] != "check" {
		fmt.Fprint(stderr, sandboxUsage.text(""))
		return exitUsage
	}
	home := zotHome()
	fmt.Fprint(stdout, sandboxSystemReport())
	settings, err := loadSandboxSettings(home)
	if err != nil {
		fmt.Fprintf(stderr, "zot: %s (checking without sandbox_writable)\n", sanitize(err.Error()))
		settings = sandboxSettings{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	failed := false
	for _, mode := range sandboxModes[1:] {
		res, err := sandboxSelfTest(ctx, mode, home, settings.Writable)
		if err != nil {
			fmt.Fprintf(stdout, "%-18s %s\n", mode, sanitize(err.Error()))
			continue
		}
		for _, line := range res.lines {
			fmt.Fprintf(stdout, "%-18s %s\n", mode, sanitize(line))
		}
		failed = failed || !res.ok
	}
	if failed {
		fmt.Fprintln(stdout, "some sandbox checks FAILED: zot refuses nothing here that it would then fail to confine, but please report this (with the lines above)")
		return exitFailure
	}
	return exitOK
}

var sandboxUsage = commandHelp{
	name:  "zot sandbox",
	about: "the kernel sandbox for the model's commands",
	subs: []subcommandHelp{
		{"check", "", "what the kernel offers the sandbox, and a self-test of each mode", ""},
		{"help", "[command]", "this text, or a command's", ""},
	},
	notes: `The modes (--sandbox MODE, or "sandbox": "MODE" in $ZOT_HOME/config.json):
off, workspace, workspace-offline, read-only. See docs/sandbox.md.
`,
}

// selfTestResult is how one mode did in its self-test.
type selfTestResult struct {
	ok    bool
	lines []string
}

// sandboxProbe is one thing the self-test program tries from inside the
// sandbox: write a file, read one, or connect to a TCP address.
type sandboxProbe struct {
	Op     string `json:"op"` // write, read, connect
	Target string `json:"target"`
	Want   bool   `json:"want"` // should it succeed
	What   string `json:"what"` // for the report
}

// sandboxSelfTest starts the self-test program in a real sandboxed shell
// for mode, in a fresh working directory, and reports each probe. An error
// is a mode the system refuses (which is not a failure of the check).
func sandboxSelfTest(ctx context.Context, mode sandboxMode, home string, extra []string) (selfTestResult, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return selfTestResult{}, fmt.Errorf("cannot find zot's own executable: %v", err)
	}
	base, err := outsideDir(home, extra)
	if err != nil {
		return selfTestResult{}, err
	}
	defer os.RemoveAll(base)
	work, outside := filepath.Join(base, "work"), filepath.Join(base, "outside")
	for _, d := range []string{work, outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return selfTestResult{}, err
		}
	}
	sb, _, err := newSandbox(sandboxConfig{Mode: mode, Cwd: work, Home: home, Temp: os.TempDir(), Writable: extra, Force: os.Getenv(sandboxForceEnv)})
	if err != nil {
		return selfTestResult{}, err
	}
	secretDir, err := os.MkdirTemp(home, ".sandbox-check-")
	if err != nil {
		return selfTestResult{}, err
	}
	defer os.RemoveAll(secretDir)
	secret := filepath.Join(secretDir, "secret")
	if err := os.WriteFile(secret, []byte("x"), 0o600); err != nil {
		return selfTestResult{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return selfTestResult{}, err
	}
	defer ln.Close()
	// The acceptor ends when ln is closed.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	tmp, err := os.MkdirTemp("", "zot-sandbox-check-")
	if err != nil {
		return selfTestResult{}, err
	}
	defer os.RemoveAll(tmp)
	probes := []sandboxProbe{
		{"write", filepath.Join(work, "f"), mode != sandboxReadOnly, "write in the working directory"},
		{"write", filepath.Join(tmp, "f"), true, "write in the temp directory"},
		{"write", filepath.Join(outside, "f"), false, "write outside the writable directories"},
		{"read", secret, false, "read a file in $ZOT_HOME"},
		{"connect", ln.Addr().String(), !mode.offline(), "connect to a loopback server outside"},
	}
	results, out, err := runSelfTestProgram(ctx, sb, exe, probes)
	if err != nil {
		return selfTestResult{lines: []string{fmt.Sprintf("FAILED (%s path): %v: %s", sb.path, err, strings.TrimSpace(out))}}, nil
	}
	res := selfTestResult{ok: true}
	for i, p := range probes {
		got := results[i]
		verdict := "ok"
		if (got == "") != p.Want {
			verdict, res.ok = "FAILED", false
		}
		how := "allowed"
		if got != "" {
			how = "refused (" + got + ")"
		}
		res.lines = append(res.lines, fmt.Sprintf("%-6s %s path: %s: %s", verdict, sb.path, p.What, how))
	}
	return res, nil
}

// outsideDir makes a directory for the self-test's working directory and
// its "outside": beside $ZOT_HOME, in the home directory or in /var/tmp,
// the first that is not in the temp directory or a sandbox_writable one.
func outsideDir(home string, extra []string) (string, error) {
	userHome, _ := os.UserHomeDir()
	for _, cand := range []string{filepath.Dir(home), userHome, "/var/tmp"} {
		real, err := filepath.EvalSymlinks(cand)
		if cand == "" || err != nil {
			continue
		}
		inside := false
		for _, w := range append([]string{os.TempDir()}, extra...) {
			if wr, err := filepath.EvalSymlinks(w); err == nil && withinDir(real, wr) {
				inside = true
			}
		}
		if inside {
			continue
		}
		if d, err := os.MkdirTemp(real, ".zot-sandbox-check-"); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no directory outside the temp directory to test in (tried beside $ZOT_HOME, ~ and /var/tmp)")
}

// runSelfTestProgram runs zot's self-test program through a sandboxed
// shell and returns, for each probe, "" when it succeeded or its error.
func runSelfTestProgram(ctx context.Context, sb *Sandbox, exe string, probes []sandboxProbe) ([]string, string, error) {
	spec := procSpec{argv: []string{"/bin/sh", "-c", `exec "$0" ` + sandboxSelfTestArg + ` "$1"`, exe, mustJSON(probes)},
		dir: sb.cwd, env: envNoSecrets, stderr: streamStdout}
	spec, err := sb.confine(spec)
	if err != nil {
		return nil, "", err
	}
	run, err := runToEnd(ctx, spec, nil, 64<<10, bashDrain)
	if err != nil {
		return nil, "", err
	}
	out := string(run.stdout.Bytes())
	var results []string
	if code := run.state.ExitCode(); code != 0 {
		return nil, out, fmt.Errorf("the sandboxed self-test exited with %d", code)
	}
	if err := json.Unmarshal(run.stdout.Bytes(), &results); err != nil || len(results) != len(probes) {
		return nil, out, errors.New("the sandboxed self-test gave no report")
	}
	return results, out, nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs and strings always encode
	}
	return string(b)
}

// sandboxSelfTestMain is the self-test program: it tries each probe and
// prints a JSON list, "" for each success, the error for each failure.
func sandboxSelfTestMain(args []string) int {
	var probes []sandboxProbe
	if len(args) != 1 || json.Unmarshal([]byte(args[0]), &probes) != nil {
		fmt.Fprintln(os.Stderr, "zot: the sandbox self-test needs its probes as one JSON argument")
		return exitUsage
	}
	results := make([]string, len(probes))
	for i, p := range probes {
		var err error
		switch p.Op {
		case "write":
			err = os.WriteFile(p.Target, []byte("x"), 0o600)
		case "read":
			_, err = os.ReadFile(p.Target)
		case "connect":
			var c net.Conn
			if c, err = net.DialTimeout("tcp", p.Target, 5*time.Second); err == nil {
				c.Close()
			}
		default:
			err = fmt.Errorf("unknown probe %q", p.Op)
		}
		if err != nil {
			results[i] = err.Error()
		}
	}
	fmt.Println(mustJSON(results))
	return exitOK
}

// seatbeltProfile is the macOS sandbox profile for sb: everything is
// allowed but writing outside the writable set, reading or writing
// $ZOT_HOME, and (offline modes) the network. Every path is a quoted
// string literal.
func seatbeltProfile(sb *Sandbox) string {
	var b strings.Builder
	b.WriteString("(version 1)\n(allow default)\n(deny file-write*\n  (require-all\n")
	for _, w := range sb.writable {
		fmt.Fprintf(&b, "    (require-not (subpath %s))\n", seatbeltString(w))
	}
	for _, dev := range writableDevices {
		fmt.Fprintf(&b, "    (require-not (literal %s))\n", seatbeltString(dev))
	}
	b.WriteString("))\n")
	// What programs outside the sandbox read or run: Seatbelt matches
	// paths, so it refuses those that do not exist yet too.
	for _, gp := range sb.guarded {
		switch gp.Bind {
		case bindReadOnly:
			fmt.Fprintf(&b, "(deny file-write* (subpath %s))\n", seatbeltString(gp.Path))
		case bindPin:
			fmt.Fprintf(&b, "(deny file-write* (literal %s))\n", seatbeltString(gp.Path))
		}
	}
	b.WriteString("(deny file-read* file-write*\n")
	for _, h := range sb.hidden {
		fmt.Fprintf(&b, "  (subpath %s)\n", seatbeltString(h))
	}
	b.WriteString(")\n")
	if sb.mode.offline() {
		b.WriteString("(deny network*)\n")
	}
	return b.String()
}

// seatbeltString quotes s as a Seatbelt (Scheme) string literal.
func seatbeltString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// writableDevices are the device files commands may write in every mode:
// output thrown away or failed on purpose.
var writableDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
