package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The differential test holds the splitter to the shell: each line runs
// under the real bash, with a PATH holding only logging shims (and, on
// Linux, the real wrappers the splitter unwraps: env, xargs, find …), and
// with bash tracing its builtins to a file descriptor. Every program the
// shell executed must be a command the splitter reported — with the same
// arguments when it says they are exact, in the directory it said — and
// every builtin it traced must be one it reported; else the splitter must
// have said it could not follow the line.

// diffSeedLines are the lines of issue 12's reproduction and adversarial
// lines of our own. Each runs in a fresh directory holding f (a file),
// sub/deeper/ and other/; names resolve to shims, so nothing real is
// removed.
var diffSeedLines = []string{
	// issue 12, section 1
	"((rm victimA))",
	"((curl -s x -o f))",
	"echo hi &>/dev/null rm victimB",
	"echo hi &>>/dev/null rm victimB",
	`echo $'a\' ; rm victimC`,
	"time -- rm v",
	"time -f %e rm x",
	"time -v rm x",
	"time -o f rm x",
	"env -S 'X=1 rm v'",
	"env -S '-i rm x'",
	"env -S '-u X rm x'",
	`env -S 'rm\_x'`,
	"echo x | xargs --replace rm x",
	`find . -name -exec -o -name x -exec rm {} \;`,
	"trap 'rm x' EXIT",
	"bash -c 'eval -- rm x'",
	"bash -c 'coproc f { rm x; }'",
	"bash -c '{rm,x}'",
	"sh -c '((rm x))'",
	"bash /dev/stdin <<'EOF'\nrm x\nEOF",
	// time: bash's keyword, and GNU time behind a quote or a wrapper
	`\time -f %e rm x`, "command time -v rm x", "time rm x", "time -p rm x", "time -p -- rm x", "time ! rm x", "! time rm x",
	// env
	"env -i -u A A=1 rm x", "env -C sub rm x", "env -- rm x", "env - rm x", "env -S 'rm -f' x", "env -vS'rm x'",
	"env -S'-C sub rm x'", "env --chdir=sub rm x", "env --ch sub rm x", "env -iC sub rm x", "env -u A -- rm -- x",
	"env FOO=1 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls", "env -S 'A=1' -- rm x",
	// xargs
	"echo a b | xargs -n1 rm", "echo a | xargs -I{} rm {}", "echo a | xargs -i rm {}", "echo a | xargs -iX rm X",
	"echo a | xargs -L1 -P2 rm", "echo a | xargs --max-args=1 rm -f", "echo a | xargs -0 rm", "printf 'a\\n' | xargs -d '\\n' rm",
	"echo a | xargs -E x rm", "echo a | xargs -e rm", "echo a | xargs --eof=x rm", "echo a | xargs -l rm", "echo x | xargs --rep rm x",
	"echo a | xargs --max-lines 1 rm", "echo a | xargs", "echo a | xargs -r -t rm 2>/dev/null", "echo a | xargs env rm",
	"echo rm x | xargs env", "echo -exec rm {} ';' | xargs find .", "echo 5 rm x | xargs timeout", "echo rm x | xargs sh -c",
	"echo a | xargs -I{} sh -c 'rm {}'", "echo a | xargs -a f rm",
	// find
	`find . -name x -exec rm {} +`, `find . -exec echo + \;`, `find . -maxdepth 1 -execdir rm {} \;`, `find . -type f -ok rm {} \;`,
	`find . -newermt 2020-01-01 -exec rm {} \;`, `find . -fprintf out '%p' -exec rm {} \;`, `find . -name f -delete`,
	`find sub other -name x -o -exec rm {} \;`, `find -L . -maxdepth 0 -exec rm {} +`, `find . -path -exec -exec rm {} \;`,
	`find . ! -name -ok -exec rm {} \;`, `find . -printf -exec -exec rm {} \;`, `find . -exec rm {} x + \;`, `find . -exec {} \;`,
	`find . -exec sh -c 'rm "$1"' _ {} \;`, `find . -name "$x" -exec rm {} \;`, `find $d -exec rm {} \;`,
	// other wrappers
	"timeout -s KILL 5 rm x", "timeout --signal=TERM 5 rm x", "timeout -k 1 5 rm x", "timeout 5s rm x", "timeout --pres 5 rm x",
	"nice -n 5 rm x", "nice -5 rm x", "nice --adjustment=3 rm x", "nice rm x", "nohup rm x", "stdbuf -o L rm x", "stdbuf -oL -eL rm x",
	"setsid rm x", "setsid -w rm x", "taskset 1 rm x", "taskset -c 0 rm x", "ionice -c 3 rm x", "ionice -c2 -n7 rm x",
	"command rm x", "builtin cd sub && rm x", "command cd sub; rm x", "exec rm x", "exec -a foo rm x", "nice timeout 5 env rm x",
	"sudo rm x", "sudo -u bob -- rm x", "sudo -E A=1 rm x", "doas -u bob rm x", "watch -x rm x", "unbuffer rm x",
	// shells
	`bash -c 'rm "$1"' _ x`, "sh -c 'rm x'", "bash -c -- 'rm x'", "bash -e -c 'rm x'", "bash -xc 'rm x'", "bash -o pipefail -c 'rm x | cat'",
	"bash --norc -c 'rm x'", "bash -c 'cd sub; rm x'; rm y", "sh -c 'cd sub && rm x'", "bash -O extglob -c 'rm x'", "bash -i -c 'rm x'",
	"bash -c \"rm $x\"", "echo rm x | bash", "echo rm x | sh -s", "bash <<< 'rm x'", "bash - <<'EOF'\nrm x\nEOF", "bash <(echo rm x)",
	"bash -c 'bash -c \"rm x\"'", "sh -c 'echo $'\\''a'\\'' ; rm x'", "sh -c 'echo hi &>/dev/null rm x'",
	// the working directory
	"(cd sub; rm x); rm y", "cd sub && (cd deeper; rm x); rm y", "pushd sub; rm x; popd; rm y", "cd sub; cd ..; rm x",
	"cd missing; rm x", "cd missing && rm x", "cd sub | rm x; rm y", "cd sub & rm x", "if true; then cd sub; fi; rm x",
	"cd sub/deeper && rm x && cd ../.. && rm y", "cd ~ && rm x", "cd && rm x", "cd -P sub && rm x", "cd -- sub && rm x",
	"pushd sub >/dev/null; pushd deeper >/dev/null; popd >/dev/null; rm x", "cd sub other; rm x", "cd \"$X\" && rm x",
	"cd -; rm x", "echo $(cd sub; rm x) && rm y", "cd sub; echo `rm x`", "true && cd sub && rm x || rm y",
	"for v in 1 2; do rm x; cd sub; done", "for v in 1 2; do (rm x; cd sub); done",
	// expansions and arithmetic
	"i=1; echo $((i+1)); rm x", "x='a[$(rm y)]'; echo $((x))", "[[ $n -eq 1 ]] && rm x", "for ((i=0;i<2;i++)); do rm x; done",
	"n=$(rm x); echo $((n))", "echo $[1+1]; rm x", "let i=1+1; rm x", "a=(1 2); echo ${a[1]}; rm x", "echo ${x:-$(rm y)}",
	"cat <<EOF\n$(rm x)\nEOF", "cat <<'EOF'\n$(rm x)\nEOF", "cat <<< \"$(rm x)\"", "rm x <<EOF\ndata\nEOF",
	"echo $(rm x) `rm y`", "echo \"$(rm x)\"", "diff <(rm x) <(rm y)", "a=1 rm x", "export A=1; rm x", "A=1; rm x",
	"echo a; rm x # comment", "rm x\nrm y", "{ rm x; rm y; } >out", "rm x || rm y && rm z", "rm x | rm y |& rm z",
	"case x in x) rm x;; esac", "for f in a b; do rm $f; done", "while false; do rm x; done; rm y", "echo {a,b}; rm x",
	`r\m x`, `"rm" x`, `'r'm x`, `$'rm' x`, `$'\x72m' x`, "exec {fd}>out; rm x", "rm x 2>&1 >/dev/null", "rm x &>/dev/null",
	"echo hi |& rm x", "[ -f f ] && rm x", "test -d sub || rm x", "read -r l < f; rm \"$l\"", "printf -v v %s a; rm \"$v\"",
	"declare -a arr=(a b); rm \"${arr[@]}\"", "arr=(a b); rm \"${arr[0]}\"", "set -e; rm x", "set -o pipefail; rm x | cat",
	"shopt -s nullglob; rm *.none", "echo a | while read l; do rm \"$l\"; done", "rm *", "rm s*", "{rm,x}", "$CMD x", "${CMD} x",
	"f() { rm x; }; f", "function f { rm x; }; f", "alias r=rm; r x", "source f", ". f", "eval rm x", "PATH=. ls",
	"x=rm; $x y", "rm $'a b' \"c d\" 'e f'", "rm -- -x", "rm \\\n x",
	"x='a -exec rm {} ;'; find . -name $x", "A='1 rm x'; env B=$A ls",
	// variables the line assigns
	"F=--force; git push $F", "F=rm; $F -rf x", "F='a  b'; rm $F x$F\"\" \"$F\"; G=; rm $G \"\"$G", "F=a; rm ${F}b \"${F}\" $F$F",
	"F=ok; (F=--force); git push $F", "F=ok; cat <<EOF; F=--force\n$(git push $F)\nEOF", "for f in a; do rm \"$f\" $f; done",
	"for f in *; do rm \"$f\"; done", "n=$(ls); cat \"$n\"", "export F=' x '; rm $F; rm \"$F\"", "F=$'a\\tb'; rm $F",
	"F=a; F=b rm $F", "F=a G=$F; rm $G", "F=-r; env rm $F x", "F=rm; sudo $F x", "F='-exec rm {} ;'; find . $F",
	"F=x; unset F; rm $F", "F=x; read F <<< y; rm $F", "F=x; declare F=y; rm $F", "F=x; F+=y; rm $F",
	// found by this round's attacks: & backgrounds the whole list, a
	// here-document runs before the rest of its line, bash joins a line
	// continuation before it reads $ or a here-document's end line
	"cd sub && true & rm x", "pushd sub >/dev/null || true & rm x", "F=ok; F=--force && true & git push $F",
	"cat <<EOF; cd sub\n$(rm x)\nEOF", "cd sub </none; rm x", "cd sub/../other && rm x", "pushd -n sub >/dev/null; popd; rm x",
	"F=--force; export F=ok G=$F; git push $G", "$'rm\\0x' -f y", "ls \"$\\\n(rm x)\"", "cat <<EOF\n$\\\n(rm x)\nEOF",
	"echo <<true\ntr\\\nue\nrm x\ntrue",
}

// shellLab runs command lines under the real bash in a sandbox of shims.
type shellLab struct {
	dir, bash, bin, home string
	n                    atomic.Int64
}

// shimNames are the programs the lines may run; each is a shim that logs
// its argv and working directory and exits 0.
var shimNames = strings.Fields("rm curl ls cat touch git grep sed awk wc date id whoami jq tar gofmt make mkdir sleep head tail " +
	"sort tee cp mv chmod python3 perl node echo true false printf test pwd kill sudo su doas watch script unbuffer busybox " +
	"zsh ksh a b c x y f g cmake go diff out -f -v -o % %e -- victimA")

// labWrappers are the wrappers that run for real on Linux, so that their
// real option grammar is what the splitter is held to.
var labWrappers = strings.Fields("env xargs find timeout nice nohup stdbuf setsid taskset ionice time")

// labShim logs one record per run to a file named for the program, so that
// a run killed before it wrote still says what ran.
const labShim = "#!/bin/sh\nprintf '%s\\0' \"$#\" \"$PWD\" \"${0##*/}\" \"$@\" >>\"$ZOT_SHIM_LOG/${0##*/}.$$\"\n"

func newShellLab(t testing.TB) *shellLab {
	sh := bashToolShell()
	if !sh.Bash {
		t.Skip("no bash on this system")
	}
	lab := &shellLab{dir: t.TempDir(), bash: sh.Path}
	if real, err := filepath.EvalSymlinks(lab.dir); err == nil {
		lab.dir = real
	}
	lab.bin, lab.home = filepath.Join(lab.dir, "bin"), filepath.Join(lab.dir, "home")
	for _, d := range []string{lab.bin, lab.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range shimNames {
		if err := os.WriteFile(filepath.Join(lab.bin, name), []byte(labShim), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{"bash": lab.bash, "sh": "/bin/sh"}
	if runtime.GOOS == "linux" {
		for _, name := range labWrappers {
			if p, err := exec.LookPath(name); err == nil && filepath.IsAbs(p) {
				links[name] = p
			}
		}
	}
	for name, target := range links {
		os.Remove(filepath.Join(lab.bin, name))
		if err := os.Symlink(target, filepath.Join(lab.bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return lab
}

// labExec is one program a shim saw run.
type labExec struct {
	dir, name string
	args      []string
}

// labRun is what running a line did.
type labRun struct {
	execs    []labExec
	builtins []string // builtins bash traced
	output   string
}

// bashBuiltins are the names bash runs itself (compgen -b).
var bashBuiltins = strings.Fields(". : [ alias bg bind break builtin caller cd command compgen complete compopt continue " +
	"declare dirs disown echo enable eval exec exit export false fc fg getopts hash help history jobs kill let local logout " +
	"mapfile popd printf pushd pwd read readarray readonly return set shift shopt source suspend test times trap true type " +
	"typeset ulimit umask unalias unset wait")

// prepare makes a fresh working directory for one line — f, sub/deeper/,
// other/ — and a directory for its shims' logs.
func (lab *shellLab) prepare() (cwd, logs string, err error) {
	n := strconv.FormatInt(lab.n.Add(1), 10)
	cwd, logs = filepath.Join(lab.dir, "lines", n), filepath.Join(lab.dir, "logs", n)
	for _, d := range []string{filepath.Join(cwd, "sub", "deeper"), filepath.Join(cwd, "other"), logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", "", err
		}
	}
	return cwd, logs, os.WriteFile(filepath.Join(cwd, "f"), []byte("a b\n"), 0o644)
}

// run runs a line with bash -c in cwd, in its own process group, and reads
// what the shims and the trace recorded. The group is killed when bash
// exits, and at the latest after ten seconds.
func (lab *shellLab) run(line, cwd, logs string) (labRun, error) {
	var r labRun
	trace, err := os.Create(filepath.Join(logs, "trace"))
	if err != nil {
		return r, err
	}
	defer trace.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return r, err
	}
	defer pr.Close()
	cmd := exec.Command(lab.bash, "-c", line)
	cmd.Dir = cwd
	cmd.Env = []string{"PATH=" + lab.bin, "HOME=" + lab.home, "SHELL=" + lab.bash, "SHELLOPTS=xtrace", "BASH_XTRACEFD=9",
		"ZOT_SHIM_LOG=" + logs, "LC_ALL=C"}
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, nil, nil, trace}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return r, err
	}
	pgid := cmd.Process.Pid
	stop := time.AfterFunc(10*time.Second, func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	var out strings.Builder
	// Reads the output until every process holding the pipe has exited
	// (or the kill above); the run waits for it.
	read := make(chan struct{})
	go func() {
		defer close(read)
		io.Copy(&out, io.LimitReader(pr, 64<<10))
		io.Copy(io.Discard, pr)
	}()
	cmd.Wait()
	<-read
	stop.Stop()
	syscall.Kill(-pgid, syscall.SIGKILL) // what the line left running with its output elsewhere
	r.output = out.String()
	entries, err := os.ReadDir(logs)
	if err != nil {
		return r, err
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(logs, e.Name()))
		if err != nil {
			return r, err
		}
		if e.Name() == "trace" {
			r.builtins = tracedBuiltins(string(b))
			continue
		}
		execs, err := parseShimLog(b)
		if err != nil {
			return r, fmt.Errorf("shim log %s: %v", e.Name(), err)
		}
		if len(execs) == 0 { // killed before it wrote: its name is all there is
			name := e.Name()[:strings.LastIndexByte(e.Name(), '.')]
			execs = []labExec{{name: name, args: nil, dir: "?"}}
		}
		r.execs = append(r.execs, execs...)
	}
	return r, nil
}

// tracedBuiltins reads bash's xtrace output ("+ cd sub", "++ '[' -f f ']'")
// for the builtins it ran.
func tracedBuiltins(trace string) []string {
	var out []string
	for _, l := range strings.Split(trace, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimLeft(l, "+"), " ")
		if !ok || !strings.HasPrefix(l, "+") {
			continue
		}
		first, _, _ := strings.Cut(rest, " ")
		if len(first) > 2 && first[0] == '\'' && first[len(first)-1] == '\'' {
			first = first[1 : len(first)-1]
		}
		if slices.Contains(bashBuiltins, first) {
			out = append(out, first)
		}
	}
	return out
}

// parseShimLog reads the records a shim wrote: argc, directory, name, args.
func parseShimLog(b []byte) ([]labExec, error) {
	var out []labExec
	if len(b) == 0 {
		return nil, nil
	}
	fields := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	for i := 0; i < len(fields); {
		n, err := strconv.Atoi(fields[i])
		if err != nil || i+3+n > len(fields) {
			return nil, fmt.Errorf("bad record at field %d of %q", i, b)
		}
		out = append(out, labExec{dir: fields[i+1], name: fields[i+2], args: fields[i+3 : i+3+n]})
		i += 3 + n
	}
	return out, nil
}

// lineOutcome is what the lab did with a line.
type lineOutcome int

const (
	lineRan     lineOutcome = iota
	lineAsked               // the splitter said it cannot follow it: not run
	lineSkipped             // it runs what the lab cannot shim: not run
)

// checkLine splits line as bash in the lab reads it and, unless the
// splitter says it cannot follow it, runs it and compares. It returns what
// disagreed, and whether the line ran.
func (lab *shellLab) checkLine(line string) (problems []string, ran bool, err error) {
	problems, outcome, err := lab.check(line)
	return problems, outcome == lineRan, err
}

func (lab *shellLab) check(line string) (problems []string, outcome lineOutcome, err error) {
	cwd, logs, err := lab.prepare()
	if err != nil {
		return nil, lineSkipped, err
	}
	env := map[string]string{"PATH": lab.bin, "HOME": lab.home, "SHELL": lab.bash}
	split := SplitCommandLine(line, ShellContext{Bash: true, Cwd: cwd, Getenv: func(k string) string { return env[k] }})
	if len(split.Unfollowed) > 0 {
		return nil, lineAsked, nil
	}
	for _, c := range split.Commands {
		if strings.Contains(c.Words[0], "/") || runsScriptFile(c) {
			// The lab runs only names it can shim; what a script file runs
			// is beyond the splitter, as docs/security.md says.
			return nil, lineSkipped, nil
		}
	}
	r, err := lab.run(line, cwd, logs)
	if err != nil {
		return nil, lineRan, err
	}
	for _, e := range r.execs {
		var candidates []string
		found := false
		for _, c := range split.Commands {
			if c.Name != e.name {
				continue
			}
			candidates = append(candidates, fmt.Sprintf("%q in %s exact=%v", c.Words, c.Cwd, c.Exact))
			found = found || e.dir == "?" || c.Cwd == e.dir && (!c.Exact || slices.Equal(c.Words[1:], e.args))
		}
		if !found {
			problems = append(problems, fmt.Sprintf("bash ran %s %q in %s; the splitter reported %v", e.name, e.args, e.dir, candidates))
		}
	}
	for _, b := range r.builtins {
		if !slices.ContainsFunc(split.Commands, func(c ShellCommand) bool { return c.Name == b }) {
			problems = append(problems, "bash ran the builtin "+b+", which the splitter did not report")
		}
	}
	if len(problems) > 0 {
		problems = append(problems, "output: "+strings.TrimSpace(r.output))
	}
	return problems, lineRan, nil
}

// runsScriptFile reports a shell running a script file (bash script.sh),
// whose commands the splitter does not read.
func runsScriptFile(c ShellCommand) bool {
	if !slices.Contains([]string{"sh", "bash", "dash", "ash"}, c.Name) {
		return false
	}
	for _, w := range c.Words[1:] {
		switch {
		case w == "--" || w == "-":
			return true
		case strings.HasPrefix(w, "-") || strings.HasPrefix(w, "+"):
			if !strings.HasPrefix(w, "--") && strings.Contains(w, "c") {
				return false
			}
		default:
			return true
		}
	}
	return false
}

// checkLines checks lines in parallel and reports every disagreement.
func (lab *shellLab) checkLines(t *testing.T, lines []string) (ran int) {
	return lab.checkLinesUntil(t, lines, time.Time{}, "").ran
}

// diffStats counts what the lab did with the lines it checked.
type diffStats struct{ checked, ran, asked, skipped, bypassed int }

func (s diffStats) String() string {
	return fmt.Sprintf("%d lines checked: %d followed and run, %d asked, %d not runnable in the lab; %d bypassed the splitter",
		s.checked, s.ran, s.asked, s.skipped, s.bypassed)
}

// diffSampleMin is how many lines a time-boxed differential checks
// whatever its deadline: a count, so that what a test checks never
// depends on how loaded the machine is.
const diffSampleMin = 20

// checkLinesUntil checks lines in parallel, starting no new one after the
// deadline (none when zero) once diffSampleMin have started, and reports
// every disagreement; note goes with each (the seed that made the line).
func (lab *shellLab) checkLinesUntil(t *testing.T, lines []string, deadline time.Time, note string) diffStats {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var st diffStats
	sem := make(chan struct{}, 4)
	for i, line := range lines {
		if i >= diffSampleMin && !deadline.IsZero() && time.Now().After(deadline) {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		// Owned by checkLinesUntil, which waits for it; it ends when its
		// line has run and been compared.
		go func(line string) {
			defer wg.Done()
			defer func() { <-sem }()
			problems, outcome, err := lab.check(line)
			mu.Lock()
			defer mu.Unlock()
			st.checked++
			switch outcome {
			case lineRan:
				st.ran++
			case lineAsked:
				st.asked++
			default:
				st.skipped++
			}
			if err != nil {
				t.Errorf("%q: %v%s", line, err, note)
			}
			if len(problems) > 0 {
				st.bypassed++
				t.Errorf("%q: the splitter followed the line but missed what bash did:\n  %s%s", line, strings.Join(problems, "\n  "), note)
			}
		}(line)
	}
	wg.Wait()
	return st
}

func TestSplitterMatchesBashOnSeedLines(t *testing.T) {
	t.Parallel()
	lab := newShellLab(t)
	ran := lab.checkLines(t, diffSeedLines)
	t.Logf("%d of %d seed lines followed and run", ran, len(diffSeedLines))
	if ran < len(diffSeedLines)/2 {
		t.Errorf("only %d of %d seed lines were followed: the test checks little", ran, len(diffSeedLines))
	}
}

// diffGeneratedLines is how many generated lines a normal test run checks;
// the fuzz target explores further.
const diffGeneratedLines = 120

func TestSplitterMatchesBashOnGeneratedLines(t *testing.T) {
	t.Parallel()
	lab := newShellLab(t)
	g := lineGen{r: rand.New(rand.NewSource(12))}
	lines := make([]string, diffGeneratedLines)
	for i := range lines {
		lines[i] = g.list(0)
	}
	ran := lab.checkLines(t, lines)
	t.Logf("%d of %d generated lines followed and run", ran, len(lines))
	if ran < len(lines)/2 {
		t.Errorf("only %d of %d generated lines were followed: the test checks little", ran, len(lines))
	}
}

// FuzzSplitterMatchesShell runs fuzzed lines under the real bash. A fuzzed
// line could name any program, so only lines that cannot reach one outside
// the lab run: no paths, no cd, no $ other than $( and $', no loops.
func FuzzSplitterMatchesShell(f *testing.F) {
	// A plain go test runs the seed lines in
	// TestSplitterMatchesBashOnSeedLines; they seed the fuzzer when it
	// fuzzes.
	if fl := flag.Lookup("test.fuzz"); fl != nil && fl.Value.String() != "" {
		for _, l := range diffSeedLines {
			if labSafe(l) {
				f.Add(l)
			}
		}
	}
	lab := newShellLab(f)
	f.Fuzz(func(t *testing.T, line string) {
		if !labSafe(line) {
			return
		}
		problems, _, err := lab.checkLine(line)
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) > 0 {
			t.Fatalf("%q: the splitter followed the line but missed what bash did:\n  %s", line, strings.Join(problems, "\n  "))
		}
	})
}

// labSafe reports whether a fuzzed line is safe to run in the lab: it can
// reach no program outside it, change no directory, and start no loop.
func labSafe(line string) bool {
	if len(line) > 2000 || strings.ContainsRune(line, 0) {
		return false
	}
	for _, bad := range []string{"/", "..", "\\", "~", "%", "PATH", "HOME", "PWD", "BASH", "SHELL", "command", "while", "until",
		"for", "select", "exec", "kill", "ulimit", "enable", "hash", "cd", "pushd", "popd", "pwd", "dirs", "setsid", "nohup"} {
		if strings.Contains(line, bad) {
			return false
		}
	}
	for i := strings.IndexByte(line, '$'); i >= 0; i = strings.IndexByte(line[i+1:], '$') + i + 1 {
		if i+1 >= len(line) || (line[i+1] != '(' && line[i+1] != '\'') {
			return false
		}
		if strings.IndexByte(line[i+1:], '$') < 0 {
			break
		}
	}
	return true
}

// lineGen makes random command lines from the constructs the splitter
// models, over the shim names: lists, pipelines, subshells, groups,
// substitutions, compound commands, redirections, here-documents, quoting,
// assignments, cd, and the wrappers that run for real in the lab.
type lineGen struct{ r *rand.Rand }

func (g lineGen) pick(s ...string) string { return s[g.r.Intn(len(s))] }

func (g lineGen) arg() string {
	if g.r.Intn(8) == 0 {
		e, _ := paramGen{c: g.r}.expansion(1)
		return e
	}
	return g.pick("x", "y", "-r", "-f", "--force", "f", "'a b'", `"c d"`, `$'t\x41b'`, `"$v"`, "$v", "*", "{a,b}", "--", "sub",
		`e\ f`, "''", `"$(true)"`, "-", "=x", "a=b", "'{}'", "+", ";", "x;", "#c")
}

func (g lineGen) name() string {
	return g.pick("rm", "curl", "ls", "cat", "touch", "git", "grep", "wc", "echo", "true", "printf", "a", "b")
}

func (g lineGen) simple() string {
	var b strings.Builder
	if g.r.Intn(6) == 0 {
		b.WriteString(g.pick("v=1 ", "A=b ", "v=$(true) "))
	}
	b.WriteString(g.name())
	for i := g.r.Intn(4); i > 0; i-- {
		b.WriteString(" " + g.arg())
	}
	if g.r.Intn(5) == 0 {
		b.WriteString(g.pick(" >out", " 2>&1", " </dev/null", " &>log", " >>out", " 2>/dev/null", " <f"))
	}
	return b.String()
}

func (g lineGen) wrapped(depth int) string {
	inner := g.simple()
	if depth < 2 && g.r.Intn(3) == 0 {
		inner = g.wrapped(depth + 1)
	}
	switch g.r.Intn(16) {
	case 0:
		return g.pick("env ", "env -i ", "env -u A ", "env -C sub ", "env A=1 ", "env -- ", "env -iu A B=2 ") + inner
	case 1:
		return "env -S " + shellQuote(g.name()+" "+g.pick("x", "-f x", "a b")) + " " + g.pick("", "y", "-- z")
	case 2:
		return "echo a b | xargs " + g.pick("", "-n1 ", "-0 ", "-I{} ", "-i ", "--replace=Q ", "-L 1 ", "-r ", "-P 2 ", "-d , ") + inner + g.pick("", " {}", " Q")
	case 3:
		return "find . " + g.pick("", "-name f ", "-maxdepth 1 ", "-type f ", "-name -exec -o ", "! -name x ") +
			g.pick("-exec ", "-execdir ") + g.name() + g.pick(" {}", " x {}", "") + g.pick(` \;`, " +", ` \; -print`)
	case 4:
		return g.pick("timeout 5 ", "timeout -s KILL 5 ", "timeout -k 1 5 ") + inner
	case 5:
		return g.pick("nice ", "nice -n 1 ", "nice -1 ") + inner
	case 6:
		return g.pick("nohup ", "stdbuf -oL ", "setsid ") + inner
	case 7:
		return g.pick("time ", "time -p ", `\time -p `, "command time -f %e ") + inner
	case 8:
		return g.pick("command ", "builtin echo x; ") + inner
	case 9:
		return g.pick("bash -c ", "sh -c ", "bash -ec ") + shellQuote(g.list(depth+1))
	case 10:
		return g.pick("sudo ", "sudo -u bob ") + inner
	default:
		return inner
	}
}

func (g lineGen) command(depth int) string {
	if depth > 2 {
		return g.simple()
	}
	switch g.r.Intn(15) {
	case 0:
		return "(" + g.list(depth+1) + ")"
	case 1:
		return "{ " + g.list(depth+1) + "; }"
	case 2:
		return "echo $(" + g.list(depth+1) + ")"
	case 3:
		return "echo `" + g.simple() + "`"
	case 4:
		return "if " + g.simple() + "; then " + g.list(depth+1) + "; fi"
	case 5:
		return "for v in 1 2; do " + g.list(depth+1) + "; done"
	case 6:
		return "case x in x) " + g.list(depth+1) + ";; esac"
	case 7:
		return g.pick("cd sub", "cd sub/deeper", "cd ..", "cd missing", "pushd sub >/dev/null", "popd >/dev/null", "cd ~", "cd", "cd other")
	case 8:
		return "cat <<EOF\nline $(" + g.simple() + ")\nEOF\n"
	case 9:
		return "i=2; echo $((i+1))"
	case 10, 11:
		return g.wrapped(0)
	case 14:
		return g.pick("v=", "export v=", "v+=", "read v <<< ", "v=a ") + g.pick("x", "'a b'", "--force", "''", "'*'", "$(true)", "\"$v\"x", "rm", " ' c '")
	default:
		return g.simple()
	}
}

func (g lineGen) list(depth int) string {
	var b strings.Builder
	b.WriteString(g.command(depth))
	for i := g.r.Intn(3); i > 0; i-- {
		if s := b.String(); !strings.HasSuffix(s, "\n") {
			b.WriteString(g.pick("; ", " && ", " || ", " | ", "\n", " & ", " |& "))
		}
		b.WriteString(g.command(depth))
	}
	return strings.TrimRight(b.String(), "\n")
}

// TestLabShimsRecordWhatRuns: the lab itself must see what runs, or a test
// built on it passes by seeing nothing.
func TestLabShimsRecordWhatRuns(t *testing.T) {
	t.Parallel()
	lab := newShellLab(t)
	cwd, logs, err := lab.prepare()
	if err != nil {
		t.Fatal(err)
	}
	r, err := lab.run("cd sub && rm -f 'a b'; echo x | bash", cwd, logs)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.execs) != 2 || r.execs[0].name != "rm" || r.execs[0].dir != filepath.Join(cwd, "sub") || !slices.Equal(r.execs[0].args, []string{"-f", "a b"}) ||
		r.execs[1].name != "x" {
		t.Errorf("execs %+v (cwd %s)", r.execs, cwd)
	}
	if !slices.Contains(r.builtins, "cd") || !slices.Contains(r.builtins, "echo") {
		t.Errorf("builtins %v", r.builtins)
	}
	if problems, ran, err := lab.checkLine("rm x; cd sub && rm y"); err != nil || !ran || len(problems) != 0 {
		t.Errorf("a line the splitter follows: ran %v, problems %v, %v", ran, problems, err)
	}
}
