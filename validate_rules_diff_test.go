package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The rule differential holds the permission rules to what bash runs
// (issue 34 §1). It builds command lines from rule sets (each in Claude
// Code's and in runok's dialect) × the ways a word can be known only at
// run time (expansions, substitutions, globs, braces, variables, input fed
// through xargs, find -exec, sh -c '… $1' and here-strings) in every
// position of a command its deny and ask rules cover × wrappers and
// contexts; runs each line under bash, in the lab of
// validate_shell_diff_test.go, with strace -f recording every execve; and
// counts a bypass wherever zot allowed the line and bash executed an argv
// that a deny or ask rule of the set matches. The argv is judged by the
// same rules as an exact command. Zero bypasses is the bar.
//
// A plain go test runs a time-boxed sample with a fresh seed, printed on
// failure; bench/rule-diff.sh runs 10,000 lines (-rules.lines).

var (
	rulesLines = flag.Int("rules.lines", 0, "run this many generated lines of the rule differential, with no time box (bench/rule-diff.sh)")
	rulesSeed  = flag.Int64("rules.seed", 0, "the seed of the rule differential's lines (0: a fresh one)")
)

// ruleDiffSet is one set of rules in both dialects, the argvs its deny
// and ask rules cover (to build lines around) and argvs they leave alone.
type ruleDiffSet struct {
	name          string
	claude, runok []string // deny or ask rules, as written
	action        string   // deny or ask
	covered, free [][]string
}

var ruleDiffSets = []ruleDiffSet{
	{name: "git push", action: "deny", claude: []string{"Bash(git push:*)"}, runok: []string{"git push *"},
		covered: [][]string{{"git", "push", "origin", "main"}, {"git", "push"}, {"git", "push", "--force"}},
		free:    [][]string{{"git", "status"}, {"git", "commit", "-m", "msg"}, {"git", "log", "--oneline"}}},
	{name: "rm -rf", action: "deny", claude: []string{"Bash(rm -rf:*)"}, runok: []string{"rm -rf *"},
		covered: [][]string{{"rm", "-rf", "build"}, {"rm", "-rf", "sub"}},
		free:    [][]string{{"rm", "-f", "x"}, {"rm", "old.txt"}}},
	{name: "curl -X POST", action: "deny", claude: []string{"Bash(curl -X POST:*)"}, runok: []string{"curl -X|--request POST *"},
		covered: [][]string{{"curl", "-X", "POST", "example.invalid"}},
		free:    [][]string{{"curl", "-s", "example.invalid"}, {"curl", "-X", "GET", "example.invalid"}}},
	{name: "chmod 777", action: "ask", claude: []string{"Bash(chmod 777:*)"}, runok: []string{"chmod 777 *"},
		covered: [][]string{{"chmod", "777", "f"}},
		free:    [][]string{{"chmod", "644", "f"}}},
}

// ruleDiffSeeds are lines every run checks with the first set (git
// push): issue 34's eight forms, which must not be allowed, and lines
// whose unknown words cannot make a deny rule match, which must be.
var ruleDiffSeeds = []struct {
	line  string
	allow bool
}{
	{"git push${NOPE} origin main", false},
	{"git ${x:-push} origin main", false},
	{"git pu$(echo)sh origin main", false},
	{"git $(echo push)", false},
	{"git `echo push`", false},
	{"echo push | xargs git", false},
	{`printf 'push\n' | xargs -I{} git {}`, false},
	{"bash -c 'git $1' x push", false},
	{`git status "$(echo x)"`, true},
	{`git commit -m "$(echo fix)"`, true},
	{"git log --oneline $NOPE", true},
	{"git log *.txt", true},
}

// ruleDiffHelpers are the programs the lines use around the command:
// allowed in every set, so that the rules under test decide.
var ruleDiffHelpers = strings.Fields("echo printf xargs find bash sh env timeout nice nohup command true read set cat")

// rules builds the set's rules in one dialect, as the user's own files
// (trusted) under a fresh home.
func (s ruleDiffSet) rules(t *testing.T, dialect string) *PermissionRules {
	home := t.TempDir()
	cmd := s.covered[0][0]
	switch dialect {
	case claudeCodeSource:
		allow := []string{"Bash(" + cmd + ":*)"}
		for _, h := range ruleDiffHelpers {
			allow = append(allow, "Bash("+h+":*)")
		}
		writeJSONFile(t, filepath.Join(home, ".claude", "settings.json"), perms("allow", allow, s.action, s.claude))
	default:
		var b strings.Builder
		b.WriteString("rules:\n")
		for _, h := range append([]string{cmd}, ruleDiffHelpers...) {
			fmt.Fprintf(&b, "  - allow: '%s *'\n", h)
		}
		for _, r := range s.runok {
			fmt.Fprintf(&b, "  - %s: '%s'\n", s.action, r)
		}
		dir := filepath.Join(home, ".config", "runok")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "runok.yml"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rules := LoadPermissionRules(PermissionSources{Cwd: t.TempDir(), UserHome: home, ConfigHome: filepath.Join(home, ".config")})
	for _, p := range rules.Problems {
		if p.Level != problemNote {
			t.Fatalf("%s rules of %s: %s", dialect, s.name, p)
		}
	}
	return rules
}

// ruleDiffFiles are made in each line's directory: the words of the sets,
// for globs and find to find.
func ruleDiffFiles() []string {
	var out []string
	for _, s := range ruleDiffSets {
		for _, argv := range append(slices.Clone(s.covered), s.free...) {
			for _, w := range argv[1:] {
				if !strings.Contains(w, "/") && !slices.Contains(out, w) {
					out = append(out, w)
				}
			}
		}
	}
	return out
}

// ruleLineGen builds lines around one argv.
type ruleLineGen struct{ r *rand.Rand }

func (g ruleLineGen) pick(s ...string) string { return s[g.r.Intn(len(s))] }

// unknown writes w so that bash makes it at run time; pre is what must run
// before the command in the same shell (an assignment). Some forms give
// more or other words (a brace list, a glob): the line runs what it runs,
// and the differential judges that.
func (g ruleLineGen) unknown(w string) (text, pre string) {
	k := min(1+g.r.Intn(max(len(w)-1, 1)), len(w)) // where a form cuts the word
	q := shellQuote(w)
	switch g.r.Intn(26) {
	case 0:
		return w + "${NOPE}", ""
	case 1:
		return "${NOPE}" + w, ""
	case 2:
		return w[:k] + "${NOPE}" + w[k:], ""
	case 3:
		return "${x:-" + w + "}", ""
	case 4:
		return `"${x-` + w + `}"`, ""
	case 5:
		return "${x:=" + w + "}", ""
	case 6:
		return "$(echo " + q + ")", ""
	case 7:
		return `"$(printf %s ` + q + `)"`, ""
	case 8:
		return "`echo " + q + "`", ""
	case 9:
		return w[:k] + "$(echo)" + w[k:], ""
	case 10:
		return w[:k] + "`true`" + w[k:], ""
	case 11:
		return w[:k] + "${x:$((0)):0}" + w[k:], ""
	case 12:
		return w[:k] + "$((0))" + w[k:], "" // another word: judged by what runs
	case 13:
		return w[:k-1] + "?" + w[k:], "" // a file of that name exists
	case 14:
		return w[:k] + "*", ""
	case 15:
		return w[:k] + "{" + w[k:] + ",}", ""
	case 16:
		return "{" + w + ",x}", ""
	case 17:
		return "$x", "x=" + q + "; "
	case 18:
		return `"$x"`, "read -r x <<< " + q + "; "
	case 19:
		return `"$1"`, "set -- " + q + "; "
	case 20:
		return `"${a[@]}"`, "a=(" + q + "); "
	case 21:
		return "$'" + w + "'", ""
	case 22:
		return `"$@"`, "set -- " + q + "; "
	case 23:
		return "$(cat <<< " + q + ")", ""
	case 24:
		return "<(echo)" + w, ""
	default:
		return w[:k] + `""` + w[k:], ""
	}
}

// command is argv with word i (and, sometimes, another) made unknown, or
// the words from i on fed to it at run time.
func (g ruleLineGen) command(argv []string) string {
	quoted := make([]string, len(argv))
	for j, w := range argv {
		quoted[j] = shellQuote(w)
	}
	i := g.r.Intn(len(argv))
	head, rest := strings.Join(quoted[:i], " "), quoted[i:]
	restText := strings.Join(argv[i:], " ")
	if i > 0 && g.r.Intn(4) == 0 {
		tail := strings.Join(rest[1:], " ")
		switch g.r.Intn(8) {
		case 0:
			return "echo " + strings.Join(rest, " ") + " | xargs " + head
		case 1:
			return "printf '%s\\n' " + rest[0] + " | xargs -I{} " + head + " {} " + tail
		case 2:
			return "xargs " + head + " <<< " + shellQuote(restText)
		case 3:
			return "sh -c " + shellQuote(head+` "$1" `+tail) + " x " + rest[0]
		case 4:
			return "bash -c " + shellQuote(head+` "$@"`) + " x " + strings.Join(rest, " ")
		case 5:
			if !strings.HasPrefix(argv[i], "-") && !strings.Contains(argv[i], "/") {
				return "find " + rest[0] + " -maxdepth 0 -exec " + head + " {} " + tail + ` \;`
			}
		case 6:
			return "echo " + strings.Join(rest, " ") + " | xargs -n" + fmt.Sprint(len(rest)) + " " + head
		}
		return "bash -c " + shellQuote(head+" $1 "+tail) + " x " + shellQuote(restText)
	}
	var pre strings.Builder
	words := slices.Clone(quoted)
	for n := 1 + g.r.Intn(2); n > 0; n-- {
		j := i
		if n == 1 && g.r.Intn(2) == 0 {
			j = g.r.Intn(len(argv))
		}
		if g.r.Intn(6) == 0 && j+1 < len(argv) {
			// Two words from one expansion that splits.
			two := argv[j] + " " + argv[j+1]
			words[j], words[j+1] = g.pick("$(echo "+two+")", "${x:-"+two+"}", "`echo "+two+"`", "$x"), ""
			if words[j] == "$x" {
				pre.WriteString("x=" + shellQuote(two) + "; ")
			}
			continue
		}
		text, p := g.unknown(argv[j])
		words[j] = text
		pre.WriteString(p)
	}
	return pre.String() + strings.Join(slices.DeleteFunc(words, func(w string) bool { return w == "" }), " ")
}

// line puts a command in a wrapper and a context.
func (g ruleLineGen) line(argv []string) string {
	cmd := g.command(argv)
	if !strings.Contains(cmd, ";") && !strings.Contains(cmd, "|") && !strings.Contains(cmd, "<<<") {
		cmd = g.pick("", "", "", "env ", "timeout 5 ", "nice ", "command ", "nohup ") + cmd
	}
	switch g.r.Intn(12) {
	case 0:
		return "(" + cmd + ")"
	case 1:
		return "{ " + cmd + "; }"
	case 2:
		return "true && " + cmd
	case 3:
		return "if true; then " + cmd + "; fi"
	case 4:
		return "echo $(" + cmd + ")"
	case 5:
		return "for i in 1; do " + cmd + "; done"
	case 6:
		return "bash -c " + shellQuote(cmd)
	case 7:
		return "true; " + cmd
	}
	return cmd
}

// straceRun runs line under bash with strace -f and returns every argv
// bash and its children executed, each with its program's base name
// first.
func (lab *shellLab) straceRun(strace, line, cwd, logs string) ([][]string, error) {
	cmd := exec.Command(strace, "-ff", "-qq", "-e", "trace=execve", "-e", "signal=none", "-s", "65536", "-xx",
		"-o", filepath.Join(logs, "st"), lab.bash, "-c", line)
	cmd.Dir = cwd
	cmd.Env = []string{"PATH=" + lab.bin, "HOME=" + lab.home, "SHELL=" + lab.bash, "ZOT_SHIM_LOG=" + logs, "LC_ALL=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pgid := cmd.Process.Pid
	stop := time.AfterFunc(10*time.Second, func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	cmd.Wait()
	stop.Stop()
	syscall.Kill(-pgid, syscall.SIGKILL) // what the line left running
	files, err := filepath.Glob(filepath.Join(logs, "st.*"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("strace wrote no trace (%v)", err)
	}
	var out [][]string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(l, "execve(") || !strings.HasSuffix(l, "= 0") {
				continue
			}
			argv, err := straceArgv(l)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", f, err)
			}
			if len(argv) > 0 {
				argv[0] = filepath.Base(argv[0])
				out = append(out, argv)
			}
		}
	}
	return out, nil
}

// straceArgv reads the argv of an execve line strace -xx wrote: every
// string as \xNN escapes.
func straceArgv(l string) ([]string, error) {
	open := strings.Index(l, ", [")
	end := strings.Index(l, "], ")
	if open < 0 || end < open {
		return nil, fmt.Errorf("not an execve line: %.200q", l)
	}
	list := l[open+3 : end]
	if strings.Contains(list, "...") {
		return nil, fmt.Errorf("strace shortened the argv: %.200q", l)
	}
	var argv []string
	for _, item := range strings.Split(list, ", ") {
		if len(item) < 2 || item[0] != '"' || item[len(item)-1] != '"' {
			return nil, fmt.Errorf("not a string %q in %.200q", item, l)
		}
		b, err := hex.DecodeString(strings.ReplaceAll(item[1:len(item)-1], `\x`, ""))
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		argv = append(argv, string(b))
	}
	return argv, nil
}

// forbidden says whether a deny or ask rule (not a default) covers argv
// run as it is.
func forbidden(rules *PermissionRules, argv []string, cwd string) (string, bool) {
	sc := ShellContext{Bash: true, Cwd: cwd}
	for _, a := range rules.commandAnswers(ruleCommand{words: argv, cwd: cwd}, 0, sc, false, newRuleBudget()) {
		if a.Rule != "" && (a.Status == DecisionDeny || a.Status == DecisionAsk) && !strings.HasPrefix(a.Rule, "allow") {
			return a.Rule, true
		}
	}
	return "", false
}

// ruleDiffStats counts what the differential did, per dialect.
type ruleDiffStats struct {
	lines   int
	allowed map[string]int // zot allowed the line, it ran, and nothing forbidden did
	asked   map[string]int // zot asked or denied
	over    map[string]int // of those, lines where nothing forbidden ran
	bypass  map[string]int
}

func (s ruleDiffStats) String() string {
	var parts []string
	for _, d := range []string{claudeCodeSource, "runok"} {
		parts = append(parts, fmt.Sprintf("%s: %d allowed (run, nothing forbidden ran), %d asked or denied (%d of them ran nothing forbidden), %d bypasses",
			d, s.allowed[d], s.asked[d], s.over[d], s.bypass[d]))
	}
	return fmt.Sprintf("%d lines, each under both dialects; %s", s.lines, strings.Join(parts, "; "))
}

func TestRuleDifferentialAgainstBash(t *testing.T) {
	t.Parallel()
	strace, err := exec.LookPath("strace")
	if err != nil {
		skipMissing(t, "SKIPPED LOUDLY: the rule differential needs strace (apt-get install strace; .ci/run installs it)")
	}
	lab := newShellLab(t)
	if out, err := exec.Command(strace, "-qq", "-e", "trace=execve", "-o", "/dev/null", "/bin/true").CombinedOutput(); err != nil {
		skipMissing(t, "SKIPPED LOUDLY: strace cannot trace here (%v: %s)", err, out)
	}
	seed := *rulesSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	note := fmt.Sprintf("\n  (seed %d: go test -run TestRuleDifferentialAgainstBash -args -rules.seed=%d)", seed, seed)
	n, deadline := 4000, time.Now().Add(3*time.Second)
	if *rulesLines > 0 {
		n, deadline = *rulesLines, time.Time{}
	}
	type setRules struct {
		set   ruleDiffSet
		rules map[string]*PermissionRules
	}
	var sets []setRules
	for _, s := range ruleDiffSets {
		sets = append(sets, setRules{s, map[string]*PermissionRules{claudeCodeSource: s.rules(t, claudeCodeSource), "runok": s.rules(t, "runok")}})
	}
	r := rand.New(rand.NewSource(seed))
	type job struct {
		set   int
		line  string
		seed  bool // one of ruleDiffSeeds, with allow
		allow bool
	}
	var jobs []job
	for _, l := range ruleDiffSeeds {
		jobs = append(jobs, job{0, l.line, true, l.allow})
	}
	for range n {
		k := r.Intn(len(sets))
		s := sets[k].set
		argv := s.covered[r.Intn(len(s.covered))]
		if r.Intn(4) == 0 {
			argv = s.free[r.Intn(len(s.free))]
		}
		jobs = append(jobs, job{set: k, line: ruleLineGen{r: r}.line(argv)})
	}
	files := ruleDiffFiles()
	st := ruleDiffStats{allowed: map[string]int{}, asked: map[string]int{}, over: map[string]int{}, bypass: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, j := range jobs {
		// Past the deadline no new line starts, once the seeds and
		// diffSampleMin generated lines have: a count, however loaded the
		// machine.
		if i >= len(ruleDiffSeeds)+diffSampleMin && !deadline.IsZero() && time.Now().After(deadline) {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		// Owned by the test, which waits for it; it ends when its line
		// has run and been judged.
		go func(j job) {
			defer wg.Done()
			defer func() { <-sem }()
			problems, decided, ran, err := lab.ruleCheck(strace, j.line, sets[j.set].rules, files)
			mu.Lock()
			defer mu.Unlock()
			st.lines++
			if err != nil {
				t.Errorf("%q: %v%s", j.line, err, note)
				return
			}
			for d, decision := range decided {
				if j.seed && (decision == DecisionAllow) != j.allow {
					t.Errorf("%q with the %s rules: zot decided %s, want allow %v", j.line, d, decision, j.allow)
				}
				switch {
				case problems[d] != "":
					st.bypass[d]++
					t.Errorf("%q with the %s rules of %q: zot allowed it, and %s%s", j.line, d, sets[j.set].set.name, problems[d], note)
				case decision == DecisionAllow:
					st.allowed[d]++
				default:
					st.asked[d]++
					if !ran[d] {
						st.over[d]++
					}
				}
			}
		}(j)
	}
	wg.Wait()
	t.Logf("%s%s", st, note)
}

// ruleCheck decides the line under each dialect's rules, runs it, and
// returns per dialect the bypass (zot allowed, a forbidden argv ran),
// zot's decision, and whether anything forbidden ran.
func (lab *shellLab) ruleCheck(strace, line string, rules map[string]*PermissionRules, files []string) (problems map[string]string, decided map[string]GateDecision, forbiddenRan map[string]bool, err error) {
	cwd, logs, err := lab.prepare()
	if err != nil {
		return nil, nil, nil, err
	}
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(cwd, f)); err == nil {
			continue // sub/ is the lab's
		}
		if err := os.WriteFile(filepath.Join(cwd, f), nil, 0o644); err != nil {
			return nil, nil, nil, err
		}
	}
	env := map[string]string{"PATH": lab.bin, "HOME": lab.home, "SHELL": lab.bash}
	sc := ShellContext{Bash: true, Cwd: cwd, Getenv: func(k string) string { return env[k] }}
	decided = map[string]GateDecision{}
	for d, r := range rules {
		decided[d] = checkCommandLine(context.Background(), nil, r, line, sc).Decision
	}
	argvs, err := lab.straceRun(strace, line, cwd, logs)
	if err != nil {
		return nil, nil, nil, err
	}
	problems, forbiddenRan = map[string]string{}, map[string]bool{}
	for d, r := range rules {
		for _, argv := range argvs {
			rule, bad := forbidden(r, argv, cwd)
			if !bad {
				continue
			}
			forbiddenRan[d] = true
			if decided[d] == DecisionAllow {
				problems[d] = fmt.Sprintf("bash ran %q, which %s covers", argv, rule)
				break
			}
		}
	}
	if len(argvs) == 0 {
		err = errors.New("strace saw nothing run, not even bash")
	}
	return problems, decided, forbiddenRan, err
}
