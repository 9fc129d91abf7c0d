package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// A command whose words use a variable the line assigned is reported with
// the value put in (field-split as bash's default IFS splits it), with the
// assigned expression where the value is known only at run time, or the
// line asks; never on its literal $F.
func TestSplitterSubstitutesTheVariablesTheLineAssigns(t *testing.T) {
	t.Parallel()
	cases := []struct {
		line string
		want []string // the commands; a word known only at run time as written
		ask  string   // "" when the line must be followed
	}{
		{"F=--force; git push $F", []string{`git -force= "push"`}, ""},
		{"F=rm; $F -rf x", []string{`rm -f= -r= "x"`}, ""},
		{"export F=-rf; rm $F x", []string{`export "F=-rf"`, `rm -f= -r= "x"`}, ""},
		{`F='a  b'; rm $F x$F"" "$F"`, []string{`rm "a" "b" "xa" "b" "a  b"`}, ""},
		{`F=; rm $F ""$F "$F"`, []string{`rm "" ""`}, ""},
		{`F=a; rm ${F}b "${F}" $F$F`, []string{`rm "ab" "a" "aa"`}, ""},
		{`F=$'a\tb'; rm $F`, []string{`rm "a" "b"`}, ""},
		{"F=a G=$F; rm $G", []string{`rm "a"`}, ""},
		{"F=x; F+=y; rm $F", []string{`rm "xy"`}, ""},
		{"F=a; F=b rm $F", []string{`rm "a"`}, ""},
		{"F=rm; sudo $F x", []string{`sudo "rm" "x"`, `rm "x"`}, ""},
		{"F=ok; (F=--force); git push $F", []string{`git "push" "ok"`}, ""},
		{"F=ok; cat <<EOF; F=--force\n$(git push $F)\nEOF", []string{`cat`, `git "push" "ok"`}, ""},
		{"for f in a; do rm \"$f\"; done", []string{`rm "a"`}, ""},
		{`n=$(ls); cat "$n"`, []string{`ls`, `cat "$(ls)"`}, ""},
		{`for f in *.go; do wc -l "$f"; done`, []string{`wc -l= "*.go"`}, ""},
		{`git push $F`, []string{`git "push" "$F"`}, ""}, // the environment's F
		{"i=0; while [ $i -lt 3 ]; do i=$((i+1)); echo $i; done", []string{`[ -l= -t= "$i" "3" "]"`, `echo "$i"`}, ""},
		{"F=x; read F; echo $F", []string{`read "F"`, `echo "$F"`}, ""},

		{"F=ok; true && F=--force; git push $F", nil, "a command word using a variable the line assigned a value zot cannot tell ($F)"},
		{"F=ok; if true; then F=--force; fi; git push $F", nil, "value zot cannot tell"},
		{"F=ok; echo x | F=--force; git push $F", []string{`echo "x"`, `git "push" "ok"`}, ""},
		{"F=ok; while true; do git push $F; F=--force; break; done", nil, "$F, assigned in a loop after a command used it"},
		{"for f in a b; do rm $f; done", nil, "value zot cannot tell ($f)"},
		{"for f in a; do :; done; rm $f", nil, "value zot cannot tell ($f)"},
		{"F=--force; bash -c 'git push $F'", nil, "value zot cannot tell ($F)"},
		{"F=x; read F; rm $F", nil, "value zot cannot tell ($F)"},
		{"F=x; declare F=y; rm $F", nil, "value zot cannot tell"},
		{"F=x; unset F; rm $F", nil, "value zot cannot tell"},
		{"F='*'; rm $F", nil, "value zot cannot tell ($F)"},
		{"F=a; rm ${F:-b}", nil, "value zot cannot tell (${F:-b})"},
		{"F=a; rm $F*", nil, "value zot cannot tell ($F*)"},
		{"F=2; head -n $((F+1)) f", nil, "value zot cannot tell ($((F+1)))"},
		{"F=x; echo ${F:=y}; rm $F", nil, "value zot cannot tell"},
		{"IFS=:; F=a:b; rm $F", nil, "value zot cannot tell ($F)"},
		{"F=(a b); rm $F", nil, "value zot cannot tell ($F)"},
		{"F=x; F[1]=y; rm $F", nil, "value zot cannot tell ($F)"},
		{"F=x; export F+=y; rm $F", nil, "value zot cannot tell ($F)"},
		{"F=x; printf -v F y; rm $F", nil, "value zot cannot tell ($F)"},
		{"F=x; : $((F=2)); rm $F", nil, "value zot cannot tell ($F)"},
		{"F=x; for F in y; do :; done; rm $F", nil, "value zot cannot tell ($F)"},
		{"F=x; readonly F; F=y; rm $F", nil, "value zot cannot tell ($F)"},
		{"F=x; { F=y; }; rm $F", nil, "value zot cannot tell ($F)"},
		{"F=x; F=y &\nrm $F", []string{`rm "x"`}, ""},
		// & puts the whole && || list in the background, not only its
		// last command.
		{"F=ok; F=--force && true & git push $F", []string{`true`, `git "push" "ok"`}, ""},
		{"F=--force || true & git push $F", []string{`true`, `git "push" "$F"`}, ""},
		{"F=ok; for F in --force; do :; done & git push $F", []string{`:`, `git "push" "ok"`}, ""},
		{"F=x; exec {F}>out; rm $F", nil, "value zot cannot tell ($F)"},
		{"F=x; sleep 0 & wait -n -p F; rm $F", nil, "value zot cannot tell ($F)"},
		{"F=x; sleep 0 & p=$!; q=$(echo -p); wait $q $p; rm $F", nil, "value zot cannot tell ($F)"},
		{"sleep 0 & a=$!; sleep 0 & b=$!; wait $a $b; rm x", []string{`sleep "0"`, `sleep "0"`, `wait "$!" "$!"`, `rm "x"`}, ""},
		{"F=x; export F=y </nonexist; rm $F", nil, "value zot cannot tell ($F)"},
		{"F=x; F=y </nonexist; rm $F", nil, "value zot cannot tell ($F)"},
		{"F=x; F=y 2>/dev/null; rm $F", []string{`rm "y"`}, ""},
		// A here-document's body runs when its command does, though it is
		// read after the rest of the line; a builtin's runs in the shell.
		{"F=; : <<EOF\n${F:=--force}\nEOF\ngit push $F", nil, "value zot cannot tell ($F)"},
		{"F=a; : <<EOF\n$((F=7))\nEOF\nrm $F", nil, "value zot cannot tell ($F)"},
		{"F=; : <<EOF; git push $F\n${F:=--force}\nEOF", nil, "value zot cannot tell ($F)"},
		{"F=x; : <<EOF; G=$F\n${F:=y}\nEOF\nrm $G", nil, "value zot cannot tell ($G)"},
		{"F=ok; cat <<EOF\nline $F\nEOF\ngit push $F", []string{`cat`, `git "push" "ok"`}, ""},
		// Declaration builtins: bash expands every argument before it
		// assigns, brace-expands them, keeps F=x export F, and keeps an
		// assignment one word behind command.
		{"F=--force; export F=ok G=$F; git push $G", []string{`export "F=ok" "G=--force"`, `git -force= "push"`}, ""},
		{"F=ok; F=--force export F; git push $F", nil, "value zot cannot tell ($F)"},
		{"F=ok; export F={ok,--force}; git push $F", nil, "value zot cannot tell ($F)"},
		{"G='--force x'; command export F=$G; git push $F", nil, "value zot cannot tell ($F)"},
		{"F=--force; getopts -- ab F -a; git push $F", nil, "value zot cannot tell ($F)"},
		// Subscripts bash evaluates as arithmetic, and what changes what
		// a name runs or how a line is read.
		{"F=--force; a=(1 2); unset \"a[F=1]\"; git push $F", nil, "value zot cannot tell ($F)"},
		{"x='a[$(touch y)]'; b=(1 2); unset \"b[x]\"", nil, "arithmetic on $x"},
		{"x=1; : {b[x]}>/dev/null", nil, "a descriptor variable with a subscript"},
		{"git=0; BASH_CMDS[git]=/tmp/evil; git status", nil, "an assignment to BASH_CMDS"},
		{"set -o history -H\necho rm -rf x\n!:1-3", nil, "set -o history"},
		{"set -H", nil, "set -H"},
		{"$'rm\\0x' -rf y", []string{`rm -f= -r= "y"`}, ""}, // bash ends $'…' at a NUL
		{"git push $'--force\\c@zzz'", []string{`git -force= "push"`}, ""},
		{"F=$(echo --force); G=${F:-x}; git push $G", nil, "value zot cannot tell ($G)"},
	}
	if c := SplitCommandLine("F=--force; git push $F", testShell("/work")).Commands; len(c) != 1 || !slices.Equal(c[0].Vars, []string{"F"}) || !c[0].Exact {
		t.Errorf("the split does not say which variables its words hold: %+v", c)
	}
	// bash expands ~ after = and : in any word shaped as an assignment.
	for _, line := range []string{"git push X=~/foo", "cp a of=~/b", "X=a:~/b; rm $X", "cp a a[1]=~/b", "cp a b+=~/c"} {
		if c := SplitCommandLine(line, testShell("/work")).Commands; c[len(c)-1].Exact {
			t.Errorf("%q: reported as exact: %+v", line, c[len(c)-1])
		}
	}
	if u := SplitCommandLine("F=--force; F+=x; rm $F", ShellContext{Cwd: "/work"}).Unfollowed; !strings.Contains(strings.Join(u, "\n"), "+=") {
		t.Errorf("dash reads F+=x as a command name; unfollowed %q", u)
	}
	for _, tc := range cases {
		split := SplitCommandLine(tc.line, testShell(t.TempDir()))
		unfollowed := strings.Join(split.Unfollowed, "\n")
		if tc.ask == "" && unfollowed != "" {
			t.Errorf("%q: unfollowed %q", tc.line, split.Unfollowed)
		}
		if tc.ask != "" && !strings.Contains(unfollowed, tc.ask) {
			t.Errorf("%q: unfollowed %q, want one naming %q", tc.line, split.Unfollowed, tc.ask)
		}
		if tc.want != nil {
			if got := renderCommandsIn(tc.line, t.TempDir()); !slices.Equal(got, tc.want) {
				t.Errorf("%q:\n got %q\nwant %q", tc.line, got, tc.want)
			}
		}
	}
}

// renderCommandsIn is renderCommands in dir.
func renderCommandsIn(line, dir string) []string {
	out := []string{}
	for _, c := range SplitCommandLine(line, testShell(dir)).Commands {
		flags, args := commandFlags(c.Name, c.Words[1:])
		keys := make([]string, 0, len(flags))
		for k := range flags {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := []string{c.Name}
		for _, k := range keys {
			parts = append(parts, "-"+k+"="+flags[k])
		}
		for _, a := range args {
			b, _ := json.Marshal(a)
			parts = append(parts, string(b))
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// Through the real zot validate, a deny-rm validator sees rm where the
// line spells it through a variable, and an allow-list validator sees the
// program the variable names.
func TestValidatorsSeeTheValuesTheLineAssigns(t *testing.T) {
	t.Parallel()
	for name, v := range issue12Validators {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			withValidators(t, z.home, obj{"name": v["name"], "script": v["script"], "commands": v["commands"]})
			for _, line := range []string{"F=rm; $F -rf victim", "R='rm -rf'; $R victim", "F=victim; rm $F"} {
				stdout, stderr, code := z.run("validate", "--json", "--", line)
				var r ValidationReport
				if err := json.Unmarshal([]byte(stdout), &r); err != nil {
					t.Fatalf("%q: %v\n%s%s", line, err, stdout, stderr)
				}
				if r.Decision != "deny" || code != 1 || r.Incomplete {
					t.Errorf("%q: decision %s (exit %d, unfollowed %q), want deny", line, r.Decision, code, r.Unfollowed)
				}
				if len(r.Commands) != 1 || r.Commands[0].Command != "rm" || !slices.Contains(r.Commands[0].Args, "victim") {
					t.Errorf("%q: validators were asked about %+v, want rm … victim", line, r.Commands)
				}
			}
		})
	}
}
