package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// issue12Bypasses are the lines of issue 12 §1 that deleted a victim file
// past a validator, or showed validators the wrong command, with what each
// validator of the issue must decide now: deny-rm denies rm and allows the
// rest; allow-list allows only echo, ls, cat and true. A line is allowed
// only where bash itself runs no rm: bash reads &> as a redirection, stops
// at the unclosed $'…', and runs a program named -f for time -f. unfollowed
// names what zot's own ask says it could not follow.
var issue12Bypasses = []struct {
	line, denyRm, allowList, unfollowed string
}{
	{"((rm victimA))", "ask", "ask", "arithmetic command"},
	{"((curl -s -o victimA https://example.invalid))", "ask", "ask", "arithmetic command"},
	{"echo hi &>/dev/null rm victimB", "allow", "allow", ""},
	{"echo hi &>>/dev/null rm victimB", "allow", "allow", ""},
	{`echo $'a\' ; rm victimC`, "allow", "allow", ""},
	{"time -- rm v", "deny", "deny", ""},
	{"time -f %e rm x", "allow", "deny", ""},
	{"time -v rm x", "allow", "deny", ""},
	{"time -o f rm x", "allow", "deny", ""},
	{"env -S 'X=1 rm v'", "deny", "deny", ""},
	{"env -S '-i rm x'", "deny", "deny", ""},
	{"env -S '-u X rm x'", "deny", "deny", ""},
	{`env -S 'rm\_x'`, "ask", "deny", "env -S with quotes, escapes"},
	{"echo x | xargs --replace rm x", "deny", "deny", ""},
	{`find . -name -exec -o -name x -exec rm {} \;`, "deny", "deny", ""},
	{"trap 'rm x' EXIT", "ask", "deny", "trap"},
	{"bash -c 'eval -- rm x'", "ask", "deny", "eval"},
	{"bash -c 'coproc f { rm x; }'", "ask", "deny", "coproc"},
	{"bash -c '{rm,x}'", "ask", "deny", "a command name known only at run time"},
	{"sh -c '((rm x))'", "deny", "deny", "(("},
	{"bash /dev/stdin <<'EOF'\nrm x\nEOF", "ask", "deny", "bash running a script zot cannot read"},
}

// issue12Victims are the files the lines above would delete.
var issue12Victims = []string{"victimA", "victimB", "victimC", "v", "x"}

var issue12Validators = map[string]obj{
	"deny-rm":    {"name": "deny-rm", "script": "deny_rm.sh", "commands": []string{"rm"}},
	"allow-list": {"name": "allow-list", "script": "allow_list.sh"},
}

func TestIssue12BypassesThroughZotValidate(t *testing.T) {
	t.Parallel()
	for name, v := range issue12Validators {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			withValidators(t, z.home, obj{"name": v["name"], "script": v["script"], "commands": v["commands"]})
			for _, tc := range issue12Bypasses {
				want := tc.denyRm
				if name == "allow-list" {
					want = tc.allowList
				}
				stdout, stderr, code := z.run("validate", "--json", "--", tc.line)
				var r ValidationReport
				if err := json.Unmarshal([]byte(stdout), &r); err != nil {
					t.Fatalf("%q: %v\n%s%s", tc.line, err, stdout, stderr)
				}
				wantCode := map[string]int{"allow": 0, "deny": 1, "ask": exitAsk}[want]
				if string(r.Decision) != want || code != wantCode {
					t.Errorf("%q: decision %s (exit %d), want %s\n%s", tc.line, r.Decision, code, want, stdout)
				}
				if tc.unfollowed != "" && !strings.Contains(strings.Join(r.Unfollowed, "\n"), tc.unfollowed) {
					t.Errorf("%q: unfollowed %q, want one naming %q", tc.line, r.Unfollowed, tc.unfollowed)
				}
				if tc.unfollowed != "" && want == "ask" {
					found := false
					for _, a := range r.Answers {
						found = found || a.Validator == "zot:splitter" && a.Status == "ask" && strings.Contains(a.Message, tc.unfollowed)
					}
					if !found {
						t.Errorf("%q: no zot:splitter ask naming %q in %+v", tc.line, tc.unfollowed, r.Answers)
					}
				}
			}
		})
	}
}

// TestIssue12BypassesThroughTheGate runs every line as a bash tool call of
// a real zot -p, with each validator of the issue: no victim file may be
// deleted, and the audit log records each call as the decision says.
func TestIssue12BypassesThroughTheGate(t *testing.T) {
	t.Parallel()
	for name, v := range issue12Validators {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var steps []replayStep
			for i, tc := range issue12Bypasses {
				steps = append(steps, toolStep(fmt.Sprintf("t%d", i), "bash", obj{"command": tc.line}))
			}
			steps = append(steps, replayStep{Events: anthropicEvents(gen{Text: "done"})})
			srv := startReplay(t, steps...)
			z := newZotRun(t)
			withValidators(t, z.home, obj{"name": v["name"], "script": v["script"], "commands": v["commands"]})
			for _, f := range issue12Victims {
				if err := os.WriteFile(filepath.Join(z.cwd, f), []byte("victim\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "go")...)
			if code != 0 || stdout != "done\n" {
				t.Fatalf("exit %d stdout %q stderr %s", code, stdout, stderr)
			}
			for _, f := range issue12Victims {
				if _, err := os.Stat(filepath.Join(z.cwd, f)); err != nil {
					t.Errorf("victim %s: %v", f, err)
				}
			}
			lines := auditLines(t, z.home)
			if len(lines) != len(issue12Bypasses) {
				t.Fatalf("%d audit lines for %d calls", len(lines), len(issue12Bypasses))
			}
			for i, tc := range issue12Bypasses {
				want := tc.denyRm
				if name == "allow-list" {
					want = tc.allowList
				}
				e := lines[i]
				wantOutcome := "blocked"
				if want == "allow" {
					wantOutcome = "ran"
				}
				if e.Outcome != wantOutcome {
					t.Errorf("%q: outcome %s, want %s (decisions %+v)", tc.line, e.Outcome, wantOutcome, e.Decisions)
				}
				if want == "ask" {
					found := false
					for _, d := range e.Decisions {
						found = found || d.By == "zot:splitter" && d.Decision == "ask" && strings.Contains(d.Reason, tc.unfollowed)
					}
					if !found {
						t.Errorf("%q: the audit log has no zot:splitter ask naming %q: %+v", tc.line, tc.unfollowed, e.Decisions)
					}
				}
			}
		})
	}
}

// A command line is checked whole or not at all: zot validate refuses a
// line on stdin longer than it reads, rather than check its first part.
func TestValidateRefusesAStdinLineBeyondItsLimit(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	withValidators(t, z.home, obj{"name": "deny-rm", "script": "deny_rm.sh", "commands": []string{"rm"}})
	z.stdin = "# " + strings.Repeat("a", validateMaxLine) + "\nrm -rf x\n"
	stdout, stderr, code := z.run("validate")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "longer than 1048576 bytes; nothing was checked") {
		t.Errorf("exit %d stdout %.200q stderr %q", code, stdout, stderr)
	}
	z.stdin = "# " + strings.Repeat("a", validateMaxLine-20) + "\nrm -rf x\n"
	if _, stderr, code = z.run("validate"); code != 1 {
		t.Errorf("a line just within the limit: exit %d, want 1 (deny) %s", code, stderr)
	}
}
