package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// issue22Families are issue 22 finding 4's four ways to make the splitter
// swallow the rest of a line, as the attack round wrote them; %s is the
// operator, and each line ends in a command that must be asked about.
var issue22Families = []struct{ form, op string }{
	{"echo ${x%s{}", "-"},
	{`echo ${x%s$'\''}`, ":-"},
	{"echo ${x%s${y:-'}'}}", ":-"},
	{`echo "${x%s'"'}"`, "#"},
}

// issue22Operators are the operators the finding lists.
var issue22Operators = []string{":-", "-", "+", ":+", "#", "##", "%", "%%", "/", "//", "/#", "^", ",", ":=", "@Q"}

// issue22Contexts are the contexts it lists, by their names in
// paramContexts.
var issue22Contexts = []string{"x=", "[[ ]]", "case word", "case pattern", "for", "$( )", "backquotes", "here-document", "double quotes"}

// issue22Lines makes the finding's lines for one family: the line as
// written, the line with each operator, and the expansion in each context;
// lines of one kind are joined into one script, each line ending in rm
// victim. rms is how many rm victim each script holds.
func issue22Lines(form, op string) (scripts []string, rms []int) {
	expansion := func(o string) string { return strings.TrimPrefix(fmt.Sprintf(form, o), "echo ") }
	scripts, rms = append(scripts, fmt.Sprintf(form, op)+"; rm victim"), append(rms, 1)
	var lines []string
	for _, o := range issue22Operators {
		lines = append(lines, "echo "+expansion(o)+"; rm victim")
	}
	scripts, rms = append(scripts, strings.Join(lines, "\n")), append(rms, len(lines))
	lines = nil
	for _, name := range issue22Contexts {
		k := slices.IndexFunc(paramContexts, func(c paramContext) bool { return c.name == name })
		if k < 0 {
			panic("no context " + name)
		}
		lines = append(lines, paramContexts[k].build(expansion(op), "rm victim"))
	}
	return append(scripts, strings.Join(lines, "\n")), append(rms, len(lines))
}

// Every line of issue 22 finding 4 through the real zot validate, with a
// deny-list and an allow-list validator: the rm after each ${…} is one the
// validators are asked about, so both deny — never allow. The lines as
// written are read exactly, with nothing to ask about.
func TestIssue22ExpansionsThroughZotValidate(t *testing.T) {
	t.Parallel()
	for name, v := range issue12Validators {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			withValidators(t, z.home, obj{"name": v["name"], "script": v["script"], "commands": v["commands"]})
			for _, fam := range issue22Families {
				scripts, rms := issue22Lines(fam.form, fam.op)
				for i, line := range scripts {
					stdout, stderr, code := z.run("validate", "--json", "--", line)
					var r ValidationReport
					if err := json.Unmarshal([]byte(stdout), &r); err != nil {
						t.Fatalf("%q: %v\n%s%s", line, err, stdout, stderr)
					}
					if r.Decision != "deny" || code != 1 {
						t.Errorf("%q: decision %s (exit %d), want deny\n%s", line, r.Decision, code, stdout)
					}
					n := 0
					for _, c := range r.Commands {
						if c.Command == "rm" && slices.Equal(c.Args, []string{"victim"}) {
							n++
						}
					}
					if n != rms[i] {
						t.Errorf("%q: validators were asked about rm victim %d times, want %d (once per line): %+v", line, n, rms[i], r.Commands)
					}
					if i == 0 && r.Incomplete {
						t.Errorf("%q: the line as the finding wrote it is read exactly, yet unfollowed %q", line, r.Unfollowed)
					}
				}
			}
		})
	}
}
