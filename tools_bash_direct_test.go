package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func needBash5(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" || !bashToolShell().Bash || !bashIs5() {
		t.Skip("the bash tool runs without the shell only on Linux with bash 5")
	}
}

// bashToolEnv is the environment the bash tool's commands get here, and
// whether it lets a line run without the shell (bashStartEnv).
func bashToolEnv(t *testing.T) (env []string, direct bool) {
	t.Helper()
	env, err := envNoSecrets.environ()
	if err != nil {
		t.Fatal(err)
	}
	_, _, direct = bashStartEnv(env)
	return env, direct
}

// The reader of literal words against bash itself: every line it takes
// must split into the same words in bash (set -- line), for the chosen
// lines and for thousands made of shell syntax at random.
func TestLiteralWordsAreBashsWords(t *testing.T) {
	t.Parallel()
	needBash5(t)
	lines := []string{
		`echo hi`, `a 'b c' "d e" f'g'"h" '' "" x=y --k=v 'it'"'"'s' "a!b"`,
		"ls -la\n", "  grep -rn 'func main' .  ", `cat "a'b" 'a"b'`, `x 'line one` + "\n" + `line two'`,
		`go test -run '^TestA$' ./...`, `a%b@c,d:e+f^g`, `tab	separated	words`,
	}
	rng := rand.New(rand.NewSource(39))
	alphabet := []string{"a", "b", "-", "=", "'", `"`, `\`, "$", "*", "?", "[", "]", "{", "}", "~", "#", "!",
		"|", "&", ";", "<", ">", "(", ")", " ", "\t", "\n", "/", ".", ",", ":", "@", "%", "+", "^", "`", "é"}
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.Intn(12) {
			b.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		lines = append(lines, b.String())
	}
	var script bytes.Buffer
	var want [][]string
	for _, line := range lines {
		words, ok := literalWords(line)
		if !ok {
			continue
		}
		fmt.Fprintf(&script, "set -- %s\nprintf '%%s\\0' \"$#\" \"$@\"; printf '\\1'\n", line)
		want = append(want, words)
	}
	if len(want) < 500 {
		t.Fatalf("only %d lines were read as literal words; the test needs more", len(want))
	}
	out, err := exec.Command(bashToolShell().Path, "-c", script.String()).Output()
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x01"), "\x01")
	if len(got) != len(want) {
		t.Fatalf("bash printed %d word lists for %d lines", len(got), len(want))
	}
	for i, g := range got {
		fields := strings.Split(strings.TrimSuffix(g, "\x00"), "\x00")
		if fields[0] != fmt.Sprint(len(want[i])) || !slices.Equal(fields[1:], want[i]) {
			t.Errorf("bash reads %q as %q; zot as %q", fields, fields[1:], want[i])
		}
	}
}

// What runs without the shell, and what is left to bash.
func TestDirectCommandDecides(t *testing.T) {
	t.Parallel()
	needBash5(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "script"), "#!/bin/sh\necho script\n", 0o755)
	writeFile(t, filepath.Join(dir, "plain"), "echo plain\n", 0o644)
	writeFile(t, filepath.Join(dir, "echo"), "#!/bin/sh\necho not bash\n", 0o755)
	base := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/nowhere"}
	for _, c := range []struct {
		line string
		env  []string
		ok   bool
	}{
		{"echo hi", nil, true},
		{"ls -la 'a b'", nil, true},
		{"./script x", nil, true},
		{dir + "/script", nil, true},
		{"./plain", nil, false},             // not executable: bash's "Permission denied"
		{"./nothing", nil, false},           // bash's "No such file"
		{"no-such-command-zot", nil, false}, // bash's "command not found"
		{"echo -n hi", nil, false},          // an option: the builtin and the program may differ
		{`echo 'a\nb'`, nil, false},         // an escape: likewise
		{"cd /", nil, false},                // a builtin
		{"printf hi", nil, false},
		{"time ls", nil, false}, // a keyword
		{"A=1 env", nil, false}, // an assignment
		{"ls *", nil, false}, {"ls ~", nil, false}, {"ls $HOME", nil, false}, {"ls | cat", nil, false},
		{"ls; ls", nil, false}, {"ls > x", nil, false}, {"ls\nls", nil, false}, {"ls {a,b}", nil, false},
		{"ls # note", nil, false}, {`ls "$x"`, nil, false}, {"ls `x`", nil, false}, {`ls a\ b`, nil, false},
		{"ls", []string{"BASH_ENV=/etc/profile"}, false},
		{"ls", []string{"SHELLOPTS=xtrace"}, false},
		{"ls", []string{"BASHOPTS=xpg_echo"}, false},
		{"ls", []string{"POSIXLY_CORRECT=1"}, false},
		{"ls", []string{"EXECIGNORE=*"}, false},
		{"ls", []string{"BASH_FUNC_ls%%=() { echo no; }"}, false},
		{"ls", []string{"SHLVL=999"}, false},
		{"ls", []string{"SHLVL=-1"}, false},
		{"ls", []string{"SHLVL=7"}, true},
		{"ls", []string{"PATH=.:/usr/bin:/bin"}, false},
		{"ls", []string{"PATH=/usr/bin/:/bin"}, false},
		{"ls", []string{"PATH="}, false},
		{"%1", nil, false}, // a job, to bash
		{"ls", []string{"IFS=x"}, false},
		{"ls", []string{"BASH_VERSION=4"}, false},
		{"ls", []string{"PS1=$ "}, false},
		{"ls", []string{"OLDPWD=/no/such/dir"}, false},
		{"ls", []string{"OLDPWD=/"}, true},
		{"ls", []string{"LC_ALL=xx_YY.UTF-8"}, false}, // bash warns when it names no locale
		{"ls", []string{"LC_ALL=C.UTF-8", "LANG=xx_YY.UTF-8"}, true},
		{"ls", []string{"SSH_CLIENT=10.0.0.1 5000 22"}, false}, // bash reads ~/.bashrc
		{"ls", []string{"SSH_CLIENT=10.0.0.1 5000 22", "SHLVL=1"}, true},
		{"echo hi", []string{"PATH=" + dir + ":/usr/bin:/bin"}, false}, // bash's echo, not dir's
	} {
		env := append(slices.Clone(base), c.env...)
		if _, ok := directCommand(c.line, dir, env); ok != c.ok {
			t.Errorf("%q with %q: runs without the shell %v, want %v", c.line, c.env, ok, c.ok)
		}
	}
	if _, ok := directCommand("ls", dir, []string{"HOME=/nowhere"}); ok {
		t.Error("ls without $PATH runs without the shell; bash would search its own default")
	}
}

// A command run without the shell gets what bash -c would give it: the
// same output, arguments (argv[0] as typed), environment and exit code.
// Lines bash must run (a script without #!, a file it may not execute, an
// unknown command) are bash's still.
func TestDirectRunIsBashs(t *testing.T) {
	t.Parallel()
	needBash5(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "args"), "#!/bin/sh\nprintf '[%s]' \"$0\" \"$@\"; echo\nenv | LC_ALL=C sort\nexit 3\n", 0o755)
	writeFile(t, filepath.Join(dir, "noshebang"), "echo run by bash; exit 4\n", 0o755)
	writeFile(t, filepath.Join(dir, "plain"), "echo plain\n", 0o644)
	env := NewToolEnv(dir, false)
	defer env.Close()
	childEnv, ok := bashToolEnv(t)
	direct := []string{"./args a 'b c' \"d e\" '' x=y", dir + "/args", "env", "echo hi there", "./args\n"}
	if !ok {
		t.Log("this environment sends every line to bash; only bash's own runs are compared")
		direct = nil
	}
	for _, line := range direct {
		if _, ok := directCommand(line, dir, childEnv); !ok {
			t.Errorf("%q does not run without the shell", line)
		}
	}
	for _, line := range append(direct, "echo -e 'a\\tb'", "./noshebang", "./plain", "no-such-command-zot") {
		bash := exec.Command(bashToolShell().Path, "-c", line)
		bash.Dir, bash.Env = dir, append(slices.Clone(childEnv), "PWD="+dir)
		want, _ := bash.CombinedOutput()
		wantCode := bash.ProcessState.ExitCode()
		if line == "env" {
			want = sortedLines(want)
		}
		res := bashTool{env}.Run(context.Background(), json.RawMessage(mustJSON(obj{"command": line})), nil)
		text := res.Content[0].Text
		got, code, _ := strings.Cut(text, "[exit code ")
		if line == "env" {
			got = string(sortedLines([]byte(got)))
		}
		if strings.TrimSuffix(got, "\n") != strings.TrimSuffix(string(want), "\n") || code != fmt.Sprintf("%d]", wantCode) {
			t.Errorf("%q: zot's bash tool gives\n%s\nbash -c gives (exit code %d)\n%s", line, text, wantCode, want)
		}
	}
}

func sortedLines(b []byte) []byte {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	slices.Sort(lines)
	return []byte(strings.Join(lines, "\n") + "\n")
}

// Which bash lines take no checkpoint: one system program that writes
// nothing, run directly. A redirection, a second command, a program that
// may write, or one not the system's, takes one.
func TestBashLineOnlyReads(t *testing.T) {
	t.Parallel()
	needBash5(t)
	if _, ok := bashToolEnv(t); !ok {
		t.Skip("this environment sends every line to bash")
	}
	for line, want := range map[string]bool{
		"cat notes.txt": true, "ls -la": true, "echo hi": true, "grep -rn 'func main' .": true, "wc -l a b": true,
		"echo hi > x": false, "cat a; rm b": false, "rm x": false, "sort -o x y": false, "tee x": false,
		"./cat x": false, "cat $(rm x)": false, "echo -e hi": false, "cat a | tee b": false,
	} {
		if got := bashLineOnlyReads(json.RawMessage(mustJSON(obj{"command": line}))); got != want {
			t.Errorf("%q only reads: %v, want %v", line, got, want)
		}
	}
	if bashLineOnlyReads(json.RawMessage(`{"command": 3}`)) {
		t.Error("arguments that are no bash call's only read")
	}
}

// The version read from bash's binary is the one bash gives itself.
func TestBashIs5ReadsTheBinarysVersion(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" || !bashToolShell().Bash {
		t.Skip("no bash")
	}
	out, err := exec.Command(bashToolShell().Path, "-c", `echo "${BASH_VERSINFO[0]}"`).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(out)) == "5"; bashIs5() != want {
		t.Errorf("bashIs5() = %v; bash says its major version is %s", bashIs5(), out)
	}
}

// TestVersionMarkIs5AcrossReads: the mark is found wherever it lies
// against versionMarkIs5's reads from the end, across their boundaries
// too, and bash 4's and a mark-less binary's are not 5.
func TestVersionMarkIs5AcrossReads(t *testing.T) {
	t.Parallel()
	const chunk = 64 << 10
	for _, size := range []int{100, chunk - 5, chunk, chunk + 7, 3*chunk + 11} {
		for _, at := range []int{0, 1, size/2 - 9, size - chunk - 30, size - chunk - 18, size - chunk - 10, size - chunk, size - 40, size - 19, size - 18} {
			if at < 0 || at+18 > size {
				continue
			}
			for _, version := range []string{"5.2.15(1)", "4.4.20(1)", "50.1"} {
				text := "@(#)Bash version " + version
				if at+len(text) > size {
					text = text[:size-at] // cut by the end of the file
				}
				b := bytes.Repeat([]byte{'x'}, size)
				copy(b[at:], text)
				// 5, then a dot or the file's end.
				want := len(text) > 17 && text[17] == '5' && (len(text) == 18 || text[18] == '.')
				if got := versionMarkIs5(bytes.NewReader(b), int64(size)); got != want {
					t.Errorf("size %d, %q at %d: %v, want %v", size, text, at, got, want)
				}
			}
		}
	}
	if versionMarkIs5(bytes.NewReader(bytes.Repeat([]byte{'x'}, chunk*2)), chunk*2) {
		t.Error("a binary without the mark is taken for bash 5")
	}
	// Two marks in one read: the last one counts.
	for _, c := range []struct {
		first, last string
		want        bool
	}{{"4.4.20(1)", "5.2.15(1)", true}, {"5.2.15(1)", "4.4.20(1)", false}} {
		b := []byte("xx@(#)Bash version " + c.first + "xx@(#)Bash version " + c.last + "xx")
		if got := versionMarkIs5(bytes.NewReader(b), int64(len(b))); got != c.want {
			t.Errorf("marks %s then %s: %v, want %v", c.first, c.last, got, c.want)
		}
	}
}
