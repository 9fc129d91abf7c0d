//go:build linux

package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The sandboxes of these tests use the test binary itself as their
// launcher (/proc/self/exe), so it answers the hidden arguments as zot
// does, before the tests start.
func init() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case sandboxLauncherArg:
			os.Exit(runSandboxLauncher(os.Args[2:]))
		case sandboxSelfTestArg:
			os.Exit(sandboxSelfTestMain(os.Args[2:]))
		}
	}
}

// sandboxLayout is a working directory, a temp directory, a $ZOT_HOME
// holding an auth.json, and a directory outside all of them, in a place
// of their own (the temp directory is not the system's, so the rest is
// outside it).
type sandboxLayout struct {
	work, tmp, home, outside string
}

const sandboxTestKey = "sk-ant-SANDBOX-TEST-KEY"

func newSandboxLayout(t testing.TB) sandboxLayout {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := sandboxLayout{work: filepath.Join(base, "work"), tmp: filepath.Join(base, "tmp"), home: filepath.Join(base, "home"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{l.work, l.tmp, l.home, l.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(l.home, "auth.json"), []byte(`{"anthropic":{"api_key":"`+sandboxTestKey+`"}}`), 0o600)
	return l
}

func (l sandboxLayout) sandbox(t testing.TB, mode sandboxMode, force string) *Sandbox {
	t.Helper()
	sb, _, err := newSandbox(sandboxConfig{Mode: mode, Cwd: l.work, Home: l.home, Temp: l.tmp, Force: force})
	if err != nil {
		t.Fatalf("sandbox %s (%s): %v", mode, force, err)
	}
	return sb
}

// sandboxBash runs command with the bash tool in sb.
func sandboxBash(t testing.TB, sb *Sandbox, cwd, command string) (string, ToolResult) {
	env := NewToolEnv(cwd, false)
	env.Sandbox = sb
	t.Cleanup(func() { env.Close() })
	args, _ := json.Marshal(obj{"command": command, "timeout": 60})
	res := bashTool{env}.Run(context.Background(), args, nil)
	return Message{Content: res.Content}.Text(), res
}

// sandboxPaths are the two ways the kernel can give a mode: namespaces
// (this machine's first choice) and, forced, Landlock and seccomp alone.
var sandboxPaths = []struct{ name, force string }{{pathNamespaces, ""}, {pathLandlockOnly, "landlock-only"}}

// loopbackServer accepts connections on 127.0.0.1 until the test ends.
func loopbackServer(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	// Ends when the listener closes.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// sandboxAttackScript is what a command tries from inside the sandbox,
// each line "name=ok" or "name=refused". The grandchild lines run the
// write two shells further down; the rest try to get out.
const sandboxAttackScript = `
try() { if (eval "$2") >/dev/null 2>&1; then echo "$1=ok"; else echo "$1=refused"; fi; }
try write-work 'echo x > "$W/f"'
try write-temp 'echo x > "$T/f"'
try write-outside 'echo x > "$O/f"'
try grandchild-work 'sh -c "sh -c \"echo x > \$W/g\""'
try grandchild-outside 'sh -c "sh -c \"echo x > \$O/g\""'
try append-outside 'echo x >> "$O/existing"'
try truncate-outside 'truncate -s 0 "$O/existing"'
try remove-outside 'rm -f "$O/existing"'
try read-auth 'grep -q api_key "$H/auth.json"'
try zot-environ 'cat /proc/$ZOTPID/environ | grep -q .'
try parent-environ 'cat /proc/$P/environ | grep -q .'
try connect 'bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT"'
try unshare-read 'unshare -r -m sh -c "umount \$H; grep -q api_key \$H/auth.json"'
try unshare-write 'unshare -r -m sh -c "echo x > \$O/u"'
try umount-home 'umount "$H" && grep -q api_key "$H/auth.json"'
try mount-over 'mount -t tmpfs none "$O" && echo x > "$O/m"'
try relaunch-wider '"$LAUNCHER" __sandbox "$WIDE" -- sh -c "echo x > \$O/r"'
if [ -n "$SUID" ]; then
  try suid-read '"$SUID" -q api_key "$H/auth.json"'
  echo "suid-caps=$("$SUID" CapEff /proc/self/status | tr -d ' \t')"
fi
echo "nnp=$(grep NoNewPrivs /proc/self/status | tr -d ' \t')"
sh -c 'sleep 1000; : '$MARK'-bg' >/dev/null 2>&1 &
setsid sh -c 'sleep 1000; : '$MARK'-setsid' >/dev/null 2>&1 &
echo done
`

// The attacker's tests of every mode on both paths: writes inside and
// outside the writable set from the command and its grandchildren,
// $ZOT_HOME, zot's /proc, a loopback server outside, unshare, mount,
// setuid, a wider sandbox of its own, and processes left behind.
func TestSandboxConfinesCommands(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for /dev/tcp")
	}
	addr := loopbackServer(t)
	_, port, _ := net.SplitHostPort(addr)
	launcher, _ := os.Executable()
	suidSrc, _ := exec.LookPath("grep")
	for _, path := range sandboxPaths {
		for _, mode := range sandboxModes[1:] {
			t.Run(path.name+"/"+string(mode), func(t *testing.T) {
				t.Parallel()
				l := newSandboxLayout(t)
				sb := l.sandbox(t, mode, path.force)
				if sb.path != path.name {
					t.Fatalf("took the %s path", sb.path)
				}
				os.WriteFile(filepath.Join(l.outside, "existing"), []byte("keep\n"), 0o644)
				suid := ""
				if os.Getuid() == 0 && suidSrc != "" {
					suid = filepath.Join(filepath.Dir(l.outside), "suidgrep")
					b, _ := os.ReadFile(suidSrc)
					os.WriteFile(suid, b, 0o755)
					os.Chmod(suid, 0o4755)
				}
				wide := mustJSON(launchPolicy{Mode: sandboxWorkspace, Path: pathLandlockOnly, ABI: sb.abi, Writable: []string{"/"}})
				mark := "zot-sandbox-mark-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "x"
				script := filepath.Join(filepath.Dir(l.outside), "attack.sh")
				os.WriteFile(script, []byte(sandboxAttackScript), 0o644)
				vars := map[string]string{"W": l.work, "T": l.tmp, "O": l.outside, "H": l.home, "PORT": port, "ZOTPID": strconv.Itoa(os.Getpid()),
					"LAUNCHER": launcher, "WIDE": wide, "SUID": suid, "MARK": mark}
				var cmd strings.Builder
				for k, v := range vars {
					cmd.WriteString(k + "=" + quoteForSh(v) + " ")
				}
				cmd.WriteString("P=$PPID sh " + quoteForSh(script))
				out, res := sandboxBash(t, sb, l.work, cmd.String())
				got := map[string]string{}
				for _, line := range strings.Split(out, "\n") {
					if k, v, ok := strings.Cut(line, "="); ok {
						got[k] = v
					}
				}
				if res.IsError || got["done"] != "" && !strings.Contains(out, "done") {
					t.Fatalf("the command failed:\n%s", out)
				}
				writesWork, online := mode != sandboxReadOnly, !mode.offline()
				want := map[string]bool{
					"write-work": writesWork, "write-temp": true, "write-outside": false,
					"grandchild-work": writesWork, "grandchild-outside": false,
					"append-outside": false, "truncate-outside": false, "remove-outside": false,
					"read-auth": false, "zot-environ": false, "parent-environ": false,
					"connect":      online,
					"unshare-read": false, "unshare-write": false, "umount-home": false, "mount-over": false,
					"relaunch-wider": false,
				}
				if suid != "" {
					want["suid-read"] = false
					if got["suid-caps"] != "CapEff:0000000000000000" {
						t.Errorf("a setuid program got capabilities: %s", got["suid-caps"])
					}
				}
				if got["nnp"] != "NoNewPrivs:1" {
					t.Errorf("no_new_privs is not set: %q", got["nnp"])
				}
				var wrong []string
				for k, allowed := range want {
					if g := got[k]; g != map[bool]string{true: "ok", false: "refused"}[allowed] {
						wrong = append(wrong, k+"="+g)
					}
				}
				sort.Strings(wrong)
				if len(wrong) > 0 {
					t.Errorf("wrong outcomes %v\n%s", wrong, out)
				}
				for _, f := range []string{"f", "g", "u", "r", "m"} {
					if _, err := os.Stat(filepath.Join(l.outside, f)); err == nil {
						t.Errorf("%s was written outside", f)
					}
				}
				if b, _ := os.ReadFile(filepath.Join(l.outside, "existing")); string(b) != "keep\n" {
					t.Errorf("the file outside is now %q", b)
				}
				if strings.Contains(out, sandboxTestKey) {
					t.Errorf("the key leaked into the output")
				}
				// Nothing the command started outlives the call: the bash
				// tool returned only after its sandbox was gone.
				if left := processesWith(mark); len(left) > 0 {
					t.Errorf("processes outlived the call: %v", left)
				}
			})
		}
	}
}

func quoteForSh(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\\''`) + "'" }

// processesWith lists the live processes whose command line holds mark,
// but zot's own launchers: a launcher that ran a command has ended
// everything of it when it reports, and may still be exiting (tearing its
// namespaces down) when the call returns.
func processesWith(mark string) []string {
	procs, _ := readProcs()
	var out []string
	for _, p := range procs {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/cmdline")
		if args := strings.Split(string(b), "\x00"); len(args) > 1 && args[1] == sandboxLauncherArg {
			continue
		}
		if !p.zombie() && strings.Contains(string(b), mark) {
			out = append(out, strconv.Itoa(p.pid)+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// Where $ZOT_HOME lies inside a writable directory, a command must not be
// able to move it aside and put one of its own making in its place (a
// config.json with "sandbox": "off", an extension): the directories on
// the way are pinned.
func TestSandboxCannotReplaceZotHome(t *testing.T) {
	t.Parallel()
	for _, path := range sandboxPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			l := newSandboxLayout(t)
			home := filepath.Join(l.work, ".local", "state", "zot")
			os.MkdirAll(home, 0o700)
			os.WriteFile(filepath.Join(home, "auth.json"), []byte(sandboxTestKey), 0o600)
			// Without namespaces, no entry can be made directly in the
			// directories leading to $ZOT_HOME (the working directory
			// here); one beneath them can.
			os.Mkdir(filepath.Join(l.work, "sub"), 0o755)
			sb, _, err := newSandbox(sandboxConfig{Mode: sandboxWorkspace, Cwd: l.work, Home: home, Temp: l.tmp, Force: path.force})
			if err != nil {
				t.Fatal(err)
			}
			out, _ := sandboxBash(t, sb, l.work, `
cat .local/state/zot/auth.json; echo "read=$?"
mv .local .moved; echo "mv-local=$?"
mv .local/state .local/moved; echo "mv-state=$?"
mv .local/state/zot .local/state/old; echo "mv-home=$?"
rm -rf .local/state/zot; echo "rm-home=$?"
echo '{"sandbox":"off"}' > .local/state/zot/config.json; echo "write-home=$?"
echo x > sub/f; echo "write-sub=$?"
`)
			for _, bad := range []string{"read=0", "mv-local=0", "mv-state=0", "mv-home=0", "write-home=0", sandboxTestKey} {
				if strings.Contains(out, bad) {
					t.Errorf("%s:\n%s", bad, out)
				}
			}
			if !strings.Contains(out, "write-sub=0") {
				t.Errorf("the workspace is not writable:\n%s", out)
			}
			if b, err := os.ReadFile(filepath.Join(home, "auth.json")); err != nil || string(b) != sandboxTestKey {
				t.Errorf("$ZOT_HOME lost its key: %q %v", b, err)
			}
			if _, err := os.Stat(filepath.Join(home, "config.json")); err == nil {
				t.Errorf("a config.json appeared in $ZOT_HOME")
			}
		})
	}
}

// A refused write gets a note naming the sandbox and the setting.
func TestSandboxRefusalGetsANote(t *testing.T) {
	t.Parallel()
	l := newSandboxLayout(t)
	sb := l.sandbox(t, sandboxWorkspaceOffline, "")
	out, res := sandboxBash(t, sb, l.work, "echo x > "+quoteForSh(filepath.Join(l.outside, "f")))
	if !res.IsError || !strings.Contains(out, "[sandbox workspace-offline refused this: "+filepath.Join(l.outside, "f")) || !strings.Contains(out, "sandbox_writable") {
		t.Errorf("result:\n%s", out)
	}
	out, _ = sandboxBash(t, sb, l.work, "bash -c 'exec 3<>/dev/tcp/127.0.0.1/9'")
	if !strings.Contains(out, "commands have no network") {
		t.Errorf("result:\n%s", out)
	}
}

// The launcher tells zot that a command ended (and all it started) on a
// pipe of its own; a command that writes there, or to the launcher's end
// through /proc, must not make zot stop waiting for it early. The second
// call runs in the spare launcher.
func TestSandboxEndReportCannotBeForged(t *testing.T) {
	t.Parallel()
	for _, path := range sandboxPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			l := newSandboxLayout(t)
			sb := l.sandbox(t, sandboxWorkspace, path.force)
			env := NewToolEnv(l.work, false)
			env.Sandbox = sb
			defer env.Close()
			forge := `for f in /dev/fd/3 /proc/1/fd/3 /proc/$PPID/fd/3 /proc/$$/fd/3; do (echo 0 > $f) 2>/dev/null && echo "forged $f"; done; sleep 1; echo slept; exit 3`
			for call := 1; call <= 2; call++ {
				res := bashTool{env}.Run(context.Background(), json.RawMessage(mustJSON(obj{"command": forge, "timeout": 60})), nil)
				out := Message{Content: res.Content}.Text()
				if strings.Contains(out, "forged") || !strings.Contains(out, "slept") || !strings.Contains(out, "[exit code 3]") {
					t.Errorf("call %d:\n%s", call, out)
				}
			}
		})
	}
}

// A command that runs past its timeout is stopped with everything it
// started, a setsid daemon included, before the call returns.
func TestSandboxTimeoutStopsEverything(t *testing.T) {
	t.Parallel()
	for _, path := range sandboxPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			l := newSandboxLayout(t)
			sb := l.sandbox(t, sandboxWorkspace, path.force)
			mark := "zot-sandbox-timeout-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "x"
			cmd := "setsid sh -c 'sleep 1000; : " + mark + "-setsid' >/dev/null 2>&1 & sh -c 'sleep 1000; : " + mark + "-bg' & echo started; sleep 1000"
			env := NewToolEnv(l.work, false)
			env.Sandbox = sb
			defer env.Close()
			res := bashTool{env}.Run(context.Background(), json.RawMessage(mustJSON(obj{"command": cmd, "timeout": 1})), nil)
			out := Message{Content: res.Content}.Text()
			if !res.IsError || !strings.Contains(out, "started") || !strings.Contains(out, "timed out after 1s") {
				t.Errorf("result:\n%s", out)
			}
			if left := processesWith(mark); len(left) > 0 {
				t.Errorf("processes outlived the call: %v", left)
			}
		})
	}
}

// Every launcher that ran a command is reaped by Close at the latest (on
// the namespaces path it reports the command's end first and is reaped in
// the background), and each call after the first runs in the spare
// launcher started after the call before it.
func TestSandboxCloseReapsLaunchers(t *testing.T) {
	t.Parallel()
	for _, path := range sandboxPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			l := newSandboxLayout(t)
			sb := l.sandbox(t, sandboxWorkspace, path.force)
			var procs []*proc
			for call := 1; call <= 3; call++ {
				var spare chan *proc
				if call > 1 {
					spare = waitSpareReady(t, sb)
				}
				p, err := sb.Start(procSpec{argv: shellArgv("echo hi; sleep 1000 >/dev/null 2>&1 &"), dir: l.work, env: envNoSecrets, stdout: streamPipe, stderr: streamStdout})
				if err != nil {
					t.Fatal(err)
				}
				procs = append(procs, p)
				sb.spare.mu.Lock()
				tookSpare := spare != nil && sb.spare.next != spare
				sb.spare.mu.Unlock()
				if call > 1 && !tookSpare {
					t.Errorf("call %d did not take the spare launcher", call)
				}
				p.stdout.SetReadDeadline(time.Now().Add(time.Minute))
				out, _ := io.ReadAll(p.stdout)
				p.stdout.Close()
				<-p.Exited()
				p.Stop(0)
				p.Reap()
				if code, _ := p.ExitCode(); string(out) != "hi\n" || code != 0 {
					t.Errorf("call %d: exit %d, output %q", call, code, out)
				}
				if p.reported != (path.name == pathNamespaces) {
					t.Errorf("call %d: reported its end: %v", call, p.reported)
				}
			}
			sb.Close()
			for _, p := range procs {
				select {
				case <-p.Gone():
				default:
					t.Errorf("launcher %d is not reaped after Close", p.pid)
				}
				if s, ok := readProcStat(strconv.Itoa(p.pid)); ok && s.ppid == os.Getpid() {
					t.Errorf("launcher %d is still a child of zot: %+v", p.pid, s)
				}
			}
		})
	}
}

// A mode the kernel cannot give is refused, never weakened.
func TestSandboxRefusedWhenTheKernelCannot(t *testing.T) {
	t.Parallel()
	l := newSandboxLayout(t)
	for _, mode := range sandboxModes[1:] {
		_, _, err := newSandbox(sandboxConfig{Mode: mode, Cwd: l.work, Home: l.home, Temp: l.tmp, Force: "unavailable"})
		if err == nil || !strings.Contains(err.Error(), "Landlock") || !strings.Contains(err.Error(), "--sandbox off") {
			t.Errorf("%s: %v", mode, err)
		}
	}
	if sb, _, err := newSandbox(sandboxConfig{Mode: sandboxOff, Force: "unavailable"}); sb != nil || err != nil {
		t.Errorf("off: %v %v", sb, err)
	}
}

func TestSandboxRefusalStopsZot(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	z.env = append(z.env, sandboxForceEnv+"=unavailable")
	flags := []string{"--provider", "anthropic", "--base-url", "http://127.0.0.1:1", "--api-key", "k", "-p"}
	_, stderr, code := z.run(append(flags, "--sandbox", "workspace", "hi")...)
	if code != exitUsage || !strings.Contains(stderr, "sandbox workspace is not available here") {
		t.Errorf("flag: exit %d: %s", code, stderr)
	}
	os.WriteFile(filepath.Join(z.home, "config.json"), []byte(`{"sandbox":"read-only"}`), 0o600)
	_, stderr, code = z.run(append(flags, "hi")...)
	if code != exitFailure || !strings.Contains(stderr, `asked for by "sandbox" in `+filepath.Join(z.home, "config.json")) {
		t.Errorf("config: exit %d: %s", code, stderr)
	}
	_, stderr, code = z.run(append(flags, "--sandbox", "strict", "hi")...)
	if code != exitUsage || !strings.Contains(stderr, `unknown sandbox mode "strict"`) {
		t.Errorf("bad mode: exit %d: %s", code, stderr)
	}
}

// The real binary: --json starts with the mode, the command runs in the
// sandbox (zot is its own launcher), and the audit log records the mode.
func TestSandboxEndToEnd(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	outside := t.TempDir()
	z.env = append(z.env, "TMPDIR="+t.TempDir()) // so that outside is outside
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "echo inside > f && echo hi; echo x > " + outside + "/f"}),
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "--json", "--sandbox", "workspace", "go")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	first, _, _ := strings.Cut(stdout, "\n")
	if first != `{"type":"session_start","cwd":"`+z.cwd+`","sandbox":"workspace","mode":"auto"}` {
		t.Errorf("first event %s", first)
	}
	if !strings.Contains(stdout, `hi\n`) || !strings.Contains(stdout, "[sandbox workspace refused this") {
		t.Errorf("tool result:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Errorf("the command wrote outside")
	}
	if b, _ := os.ReadFile(filepath.Join(z.cwd, "f")); string(b) != "inside\n" {
		t.Errorf("the command did not write inside: %q", b)
	}
	b, _ := os.ReadFile(filepath.Join(z.home, "logs", "audit.jsonl"))
	if !strings.Contains(string(b), `"tool":"bash"`) || !strings.Contains(string(b), `"sandbox":"workspace"`) {
		t.Errorf("audit log:\n%s", b)
	}
}

// When zot is killed outright, the launcher dies with it (PDEATHSIG), and
// with the launcher, PID 1 of its namespace, everything the command
// started.
func TestSandboxDiesWithZot(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	mark := "zot-sandbox-orphan-" + strconv.Itoa(os.Getpid())
	started := filepath.Join(z.cwd, "started")
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "setsid sh -c 'sleep 1000; : " + mark + "' & sh -c 'sleep 1000; : " + mark + "' & touch started; sleep 1000"}),
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	cmd := z.cmd(append(anthropicFlags(srv), "-p", "--sandbox", "workspace", "go")...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the command to start", func() bool { _, err := os.Stat(started); return err == nil })
	// A child caught in its exec shows no command line for a moment.
	waitFor(t, "both marked processes", func() bool { return len(processesWith(mark)) >= 2 })
	cmd.Process.Kill()
	cmd.Wait()
	waitFor(t, "the sandbox's processes to die", func() bool { return len(processesWith(mark)) == 0 })
}

func TestSandboxCheckCommand(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		force, want string
	}{{"", "ok     namespaces path: connect to a loopback server outside: allowed"}, {"landlock-only", "ok     landlock-only path: write outside"}, {"unavailable", "not available here"}} {
		t.Run(c.force, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			tmp := t.TempDir()
			z.env = append(z.env, "TMPDIR="+tmp, sandboxForceEnv+"="+c.force)
			stdout, stderr, code := z.run("sandbox", "check")
			if code != 0 || strings.Contains(stdout, "FAILED") || !strings.Contains(stdout, c.want) || !strings.Contains(stdout, "landlock: ABI") {
				t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			for _, mode := range sandboxModes[1:] {
				if !strings.Contains(stdout, string(mode)+" ") {
					t.Errorf("no line for %s:\n%s", mode, stdout)
				}
			}
		})
	}
}

// BenchmarkSandboxBashCall is the cost of one bash call (`echo hi`) in
// each mode, with the zot binary as the launcher and the spare launcher
// ready, as it is when the model takes a moment between calls; ms-median
// is the median call, the figure the issue asks for (run with
// -benchtime=200x). The git cases run in a repository with what zot
// guards there (a .zot, a .claude, a runok.yml): the guard's look before
// and after each call, and the namespaces path's binds, are in them.
func BenchmarkSandboxBashCall(b *testing.B) {
	l := newSandboxLayout(b)
	var guarded []guardedPath
	if _, err := exec.LookPath("git"); err == nil {
		repo := filepath.Join(l.work, "repo")
		os.Mkdir(repo, 0o755)
		gitRepo(b, repo, 100)
		os.MkdirAll(filepath.Join(repo, ".zot"), 0o755)
		os.MkdirAll(filepath.Join(repo, ".claude"), 0o755)
		os.WriteFile(filepath.Join(repo, "runok.yml"), []byte("rules: []\n"), 0o644)
		guarded = projectGuarded(repo, nil, nil)
	}
	for _, c := range []struct {
		mode  sandboxMode
		force string
		git   bool
	}{{sandboxOff, "", false}, {sandboxWorkspace, "", false}, {sandboxWorkspaceOffline, "", false}, {sandboxWorkspace, "landlock-only", false}, {sandboxWorkspaceOffline, "landlock-only", false},
		{sandboxWorkspace, "", true}, {sandboxWorkspace, "landlock-only", true}} {
		name := string(c.mode)
		if c.force != "" {
			name += "/" + c.force
		}
		if c.git {
			name += "/git"
		}
		b.Run(name, func(b *testing.B) {
			if c.git && guarded == nil {
				b.Skip("BENCHMARK SKIPPED: git is not installed")
			}
			env, guard := NewToolEnv(l.work, false), []guardedPath(nil)
			if c.git {
				env, guard = NewToolEnv(filepath.Join(l.work, "repo"), false), guarded
			}
			if c.mode != sandboxOff {
				sb, _, err := newSandbox(sandboxConfig{Mode: c.mode, Cwd: env.Cwd, Home: l.home, Temp: l.tmp, Force: c.force, Guard: guard})
				if err != nil {
					b.Fatal(err)
				}
				sb.launcher = zotBin(b) // what a bash call of zot starts
				env.Sandbox = sb
			}
			defer env.Close()
			args := json.RawMessage(`{"command":"echo hi"}`)
			call := func() time.Duration {
				start := time.Now()
				res := bashTool{env}.Run(context.Background(), args, nil)
				took := time.Since(start)
				if res.IsError {
					b.Fatalf("echo hi: %s", Message{Content: res.Content}.Text())
				}
				return took
			}
			call() // the first call has no spare launcher ready
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// The model thinks between calls: time enough for the
				// spare launcher to be ready.
				b.StopTimer()
				sb, _ := env.Sandbox.(*Sandbox)
				var spare chan *proc
				if sb != nil {
					spare = waitSpareReady(b, sb)
				}
				b.StartTimer()
				times = append(times, call())
				if sb != nil {
					sb.spare.mu.Lock()
					unused := sb.spare.next == spare
					sb.spare.mu.Unlock()
					if unused {
						b.Fatalf("the call did not take the spare launcher")
					}
				}
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			b.ReportMetric(float64(times[len(times)/2])/float64(time.Millisecond), "ms-median")
		})
	}
}

// waitSpareReady waits until the sandbox's spare launcher has set up and
// blocks reading its command, and returns where Start takes it from.
func waitSpareReady(b testing.TB, sb *Sandbox) chan *proc {
	// The spare is started once the last command has ended, which is
	// about when the call returns; the first call has none before it.
	var ch chan *proc
	for deadline := time.Now().Add(10 * time.Second); ch == nil && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		sb.spare.mu.Lock()
		ch = sb.spare.next
		sb.spare.mu.Unlock()
	}
	if ch == nil {
		b.Fatalf("no spare launcher was started")
	}
	p := <-ch
	ch <- p
	if p == nil {
		b.Fatalf("the spare launcher could not be started")
	}
	// The thread that reads may be any of the launcher's.
	tasks := "/proc/" + strconv.Itoa(p.pid) + "/task/"
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		entries, _ := os.ReadDir(tasks)
		for _, e := range entries {
			if w, _ := os.ReadFile(tasks + e.Name() + "/wchan"); strings.Contains(string(w), "pipe") {
				return ch
			}
		}
	}
	b.Fatalf("the spare launcher %d never got ready", p.pid)
	return nil
}
