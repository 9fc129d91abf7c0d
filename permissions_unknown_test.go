package main

import (
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// claudeSpecPatterns must read a Bash rule exactly as claudeBashMatch
// does: on known text, a rule's patterns meet the text if and only if the
// rule matches it. Random specifiers and texts over the bytes that matter
// (*, :, \, blanks, word and non-word characters).
func TestClaudeRulePatternsMatchAsTheRuleDoes(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(34))
	alpha := []string{"a", "b", "-", "/", " ", "\t", "*", ":", `\`, "_", "ab", "a "}
	gen := func(n int) string {
		var b strings.Builder
		for range r.Intn(n) {
			b.WriteString(alpha[r.Intn(len(alpha))])
		}
		return b.String()
	}
	for range 20000 {
		spec, text := gen(6), gen(7)
		if r.Intn(3) == 0 {
			spec += ":*"
		}
		want := claudeBashMatch(spec, text)
		got := false
		for _, p := range claudeSpecPatterns(spec) {
			if m, ok := patternsMeet(p, textToks(text)); ok {
				got = true
				if m != text {
					t.Fatalf("spec %q, text %q: the meeting is %q", spec, text, m)
				}
			}
		}
		if got != want {
			t.Fatalf("spec %q, text %q: the patterns say %v, the rule %v", spec, text, got, want)
		}
	}
}

// What meet finds matches both patterns, and it finds one wherever a
// text both match exists: checked against each rule's own matcher on the
// text found, and on texts built to match both.
func TestMeetFindsATextBothPatternsMatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec, words string
		last        WordShape // the last word's
		want        bool
	}{
		{"git push:*", "git push${NOPE}", WordShape{Holes: []WordHole{{Start: 4, End: 11, Split: true}}}, true},
		{"git push:*", "git ${x}", WordShape{Holes: []WordHole{{Start: 0, End: 4, Split: true}}}, true},
		{"git push:*", "git log$x", WordShape{Holes: []WordHole{{Start: 3, End: 5, Split: true}}}, false},
		{"rm -rf build/:*", "rm -rf build/$x", WordShape{Holes: []WordHole{{Start: 6, End: 8, Split: true}}}, true},
		// A file name may hold a blank: "-rf .txt" is a file *.txt matches,
		// and the text rm -rf .txt is what Claude Code's rule matches.
		{"rm -rf:*", "rm *.txt", WordShape{Holes: []WordHole{{Start: 0, End: 1}}, Glob: true}, true},
		{"rm -rf:*", "rm x*.txt", WordShape{Holes: []WordHole{{Start: 1, End: 2}}, Glob: true}, false},
		{"rm -rf *", "rm -r$(x)", WordShape{Holes: []WordHole{{Start: 2, End: 6, Split: true}}}, true},
		{"curl -X POST *", "curl -X P$x", WordShape{Holes: []WordHole{{Start: 1, End: 3, Split: true}}}, true},
		{"curl -X POST *", "curl -X G$x", WordShape{Holes: []WordHole{{Start: 1, End: 3, Split: true}}}, false},
	} {
		words := strings.Fields(tc.words)
		shapes := make([]WordShape, len(words))
		shapes[len(shapes)-1] = tc.last
		c := shapedCommand{name: words[0], words: words, shapes: shapes}
		text, got := claudeCould(&claudeRule{tool: "Bash", spec: tc.spec, hasSpec: true}, c.templates())
		if got != tc.want {
			t.Errorf("%q against %q: could match %v (%q), want %v", tc.words, tc.spec, got, text, tc.want)
		}
		if got && !claudeBashMatch(tc.spec, text) {
			t.Errorf("%q against %q: the text found, %q, does not match the rule", tc.words, tc.spec, text)
		}
	}
}

// judgeLine is the rules' decision about a line, with the user's own rules
// of one dialect in a fresh home.
func judgeLine(t *testing.T, settings map[string]any, runok, line string) GateDecision {
	t.Helper()
	home := t.TempDir()
	if settings != nil {
		writeJSONFile(t, filepath.Join(home, ".claude", "settings.json"), settings)
	}
	if runok != "" {
		dir := filepath.Join(home, ".config", "runok")
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, "runok.yml"), []byte(runok), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cwd := t.TempDir()
	rules := LoadPermissionRules(PermissionSources{Cwd: cwd, UserHome: home, ConfigHome: filepath.Join(home, ".config")})
	return checkCommandLine(context.Background(), nil, rules, line, ShellContext{Bash: true, Cwd: cwd}).Decision
}

// An allow stands only where it holds for every value: in dontAsk mode a
// word an allow rule does not cover whatever it is falls to the mode, and
// a glob or a word that may vanish is judged each way.
func TestAnAllowHoldsForEveryValue(t *testing.T) {
	t.Parallel()
	dontAsk := func(allow ...string) map[string]any {
		s := perms("allow", allow)
		s["permissions"].(map[string]any)["defaultMode"] = "dontAsk"
		return s
	}
	for _, tc := range []struct {
		settings map[string]any
		line     string
		want     GateDecision
	}{
		{dontAsk("Bash(git status)"), "git status", DecisionAllow},
		{dontAsk("Bash(git status)"), "git $(echo status)", DecisionDeny},
		{dontAsk("Bash(git status)"), "git status $x", DecisionDeny}, // $x may be a word
		{dontAsk("Bash(git status:*)"), "git status $x", DecisionAllow},
		{dontAsk("Bash(git status *)"), "git status $x", DecisionAllow},
		{dontAsk("Bash(echo $HOME)"), "echo $HOME", DecisionDeny}, // the text as written allows nothing
		{dontAsk("Bash(ls *.go)"), "ls *.go", DecisionAllow},
		{dontAsk("Bash(ls *.go)"), "ls *.go *.md", DecisionDeny},
		{dontAsk("Bash(ls *.go)"), "shopt -s nullglob; ls *.go", DecisionDeny}, // ls alone
		{dontAsk("Bash(ls *.go)", "Bash(ls)", "Bash(shopt:*)"), "shopt -s nullglob; ls *.go", DecisionAllow},
		{perms("allow", []string{"Bash(rm:*)"}, "ask", []string{"Bash(rm -rf:*)"}), "rm -f *.o", DecisionAllow},
		{perms("allow", []string{"Bash(rm:*)"}, "ask", []string{"Bash(rm -rf:*)"}), "rm *.o", DecisionAsk}, // a file "-rf .o"
		{perms("allow", []string{"Bash(rm:*)"}, "ask", []string{"Bash(rm -rf:*)"}), "rm $flags build", DecisionAsk},
		{perms("allow", []string{"Bash(git:*)"}, "deny", []string{"Bash(git push:*)"}), "git push $x", DecisionDeny},
		{perms("allow", []string{"Bash(git:*)"}, "deny", []string{"Bash(git push:*)"}), "x=push; git $x", DecisionDeny},
		{perms("allow", []string{"Bash(find:*)", "Bash(git:*)"}, "deny", []string{"Bash(git push:*)"}), `find push -exec git {} \;`, DecisionAsk},
		{perms("allow", []string{"Bash(xargs:*)", "Bash(git:*)"}, "deny", []string{"Bash(git push:*)"}), "xargs git <<< push", DecisionAsk},
	} {
		if got := judgeLine(t, tc.settings, "", tc.line); got != tc.want {
			t.Errorf("%q with %v: %s, want %s", tc.line, tc.settings, got, tc.want)
		}
	}
}

// runok's rules are matched by words, flags in any order: the readings
// tried must find what its matcher would, and only that.
func TestRunokJudgesEveryReadingOfAnUnknownWord(t *testing.T) {
	t.Parallel()
	const rules = `rules:
  - allow: 'git *'
  - allow: 'rm *'
  - allow: 'curl *'
  - allow: 'find *'
  - allow: 'cat *'
  - deny: 'git push *'
  - deny: 'rm -rf *'
  - ask: 'curl -X|--request POST *'
`
	for _, tc := range []struct {
		line string
		want GateDecision
	}{
		{"git commit -m \"$(cat msg)\"", DecisionAllow}, // the first positional word is commit
		{"git $x commit", DecisionAsk},                  // $x may be push
		{"git -C $dir status", DecisionAsk},             // runok does not know -C takes a value
		{"git log *.txt", DecisionAllow},
		{"rm *.o", DecisionAllow},             // a file name ending .o is never -rf
		{"rm $(ls) build", DecisionAsk},       // $(ls) may print -rf
		{"rm -f $x", DecisionAsk},             // may be -rf, or -r -f
		{"curl -X \"$m\" x", DecisionAsk},     // $m may be POST
		{"curl --request=P$x x", DecisionAsk}, // the joined form
		{"curl -s \"https://example.invalid/$path\"", DecisionAllow},
		{"curl -s \"$url\"", DecisionAsk},                  // runok reads -X=POST as -X POST
		{"find . -name '*.go' -exec rm {} +", DecisionAsk}, // rm gets file names: -rf is one
	} {
		if got := judgeLine(t, nil, rules, tc.line); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.line, got, tc.want)
		}
	}
}

// A validator is asked about the words as written; where some are known
// only at run time its allow is an ask.
func TestAValidatorsAllowOfUnknownWordsAsks(t *testing.T) {
	t.Parallel()
	v := Validator{Name: "allow", Argv: []string{"sh", "-c", `cat >/dev/null; echo '{"jsonrpc":"2.0","id":1,"result":{"status":"allow"}}'`}, Timeout: validatorDefaultTimeout}
	for line, want := range map[string]GateDecision{
		"git status":                       DecisionAllow,
		"git $(echo push)":                 DecisionAsk,
		"echo push | xargs git":            DecisionAsk,
		"git commit -m \"$(cat msg.txt)\"": DecisionAsk,
		"echo $HOME; printf '%s' \"$x\"":   DecisionAllow, // they run nothing they are given
	} {
		r := CheckCommandLine(context.Background(), []Validator{v}, line, t.TempDir())
		if r.Decision != want {
			t.Errorf("%q: %s, want %s (%+v)", line, r.Decision, want, r.Answers)
		}
	}
}
