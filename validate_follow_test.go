package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What the splitter does not follow it must say, naming the construct —
// never guess. Each line here must be Unfollowed with the message given.
func TestSplitterNamesWhatItDoesNotFollow(t *testing.T) {
	t.Parallel()
	cases := []struct{ line, want string }{
		{"$CMD x", "a command name known only at run time"},
		// bash joins \<newline> before it reads $, ${…} or a
		// here-document's lines: each of these ran touch unreported.
		{"git status <<true\ntr\\\nue\ntouch pwn\ntrue\n", "a here-document line that ends in a line continuation"},
		{"cat <<EOF\n$\\\n(touch pwn)\nEOF\n", "a line continuation after $"},
		{"ls \"$\\\n(touch pwn)\"", "a line continuation after $"},
		{"ls <<< \"$\\\n(touch pwn)\"", "a line continuation after $"},
		{"ls ${x:-\"$\\\n(touch pwn)\"}", "a line continuation inside ${…}"},
		{"{rm,x}", "a command name known only at run time"},
		{"/bin/r? x", "a command name known only at run time"},
		{"$(echo rm) x", "a command name known only at run time"},
		{"exec $CMD x", "exec argument $CMD known only at run time"},
		{"sudo \"$c\" x", "sudo argument \"$c\" known only at run time"},
		{"((i++))", "an arithmetic command ((…))"},
		{"eval rm x", "eval"},
		{"trap 'rm x' EXIT", "trap, whose command runs later"},
		{"coproc rm x", "coproc"},
		{"source ./env.sh", "source, which runs a file's commands"},
		{". ./env.sh", "., which runs a file's commands"},
		{"f() { :; }", "a function definition"},
		{"function f { :; }", "a function definition"},
		{"alias ll='ls -l'", "an alias definition"},
		{"python3 <<'EOF'\nprint(1)\nEOF", "python3 reading its program from stdin"},
		{"perl <<< 'print 1'", "perl reading its program from stdin"},
		{"curl -s x | sh", "sh reading its commands from stdin"},
		{"bash <<'EOF'\nrm x\nEOF", "bash reading its commands from stdin"},
		{"sudo bash -s < x.sh", "bash reading its commands from stdin"},
		{"bash <(curl -s x)", "known only at run time"},
		{"xargs -I{} sh -c '{}'", "known only at run time"},
		{"timeout --bogus 5 rm x", "timeout option --bogus, which zot does not know"},
		{"nice -z rm x", "nice option -z, which zot does not know"},
		{"env --split-string", "env --split-string without its value"},
		{"sudo --bogus rm x", "sudo option --bogus"},
		{"find . -frobnicate -exec rm {} \\;", "find -frobnicate, which zot does not know"},
		{"find \"$dir\" -delete", "a find start point known only at run time"},
		{"find . -name $x", "a find -name argument that may split into several words"},
		{"find . -name *.go -delete", "a find -name argument that may split into several words"},
		{"env A=$x ls", "env argument A=$x known only at run time"},
		{"timeout -s $sig 5 ls", "timeout -s value $sig, which may split into several words"},
		{"timeout x$t ls", "timeout operand that may split into several words"},
		{"su bob$x -c ls", "su argument bob$x, which may split into several words"},
		{"find . -name x -exec \"$c\" {} \\;", "a find -exec word known only at run time"},
		{"echo rm x | xargs env", "env whose command comes from xargs input"},
		{"zsh -c 'rm x'", "zsh, which runs commands zot does not unwrap"},
		{"strace -f rm x", "strace, which runs commands zot does not unwrap"},
		{"su -c 'rm x'", "su -c, which runs the command with the user's login shell"},
		{"x='a[$(rm y)]'; echo $((x))", "arithmetic on $x"},
		{"echo $(( $(cat n) + 1 ))", "arithmetic on $(cat n"},
		{"[[ $n -gt 2 ]]", "arithmetic on $n"},
		{"let n=m+1", "arithmetic on $m"},
		{"echo ${a[$i]}", "arithmetic on $i"},
		{"echo ${s:$o}", "arithmetic on $o"},
		{"echo ${!ref}", "an indirect expansion"},
		{"echo ${p@P}", "a prompt expansion"},
		{"read \"$name\"", "read argument \"$name\" known only at run time"},
		{"printf -v \"$n\" x", "printf of a variable name known only at run time"},
		{"declare \"$n=1\"", "declare of a name known only at run time"},
		{"declare -i n", "integer or reference attribute"},
		{"[ -v \"$n\" ]", "[ -v of a variable name known only at run time"},
		{"mapfile -C 'rm x' -c 1 a < f", "mapfile -C, which runs a callback"},
		{"PATH=.:$PATH ls", "an assignment to PATH"},
		{"export BASH_ENV=x.sh", "an assignment to BASH_ENV"},
		{"LD_PRELOAD=./x.so ls", "an assignment to LD_PRELOAD"},
		{"read PATH < f", "an assignment to PATH"},
		{"for PATH in .; do ls; done", "an assignment to PATH"},
		{"set -k; ls", "set -k, which changes how bash reads commands"},
		{"shopt -s expand_aliases", "shopt -s expand_aliases"},
		{"bash -O extglob -c 'ls'", "bash -O extglob"},
		{"bash --posix -c 'ls'", "bash --posix"},
		{"enable -f ./x.so x", "enable, which loads or hides builtins"},
		{"hash -p ./evil ls", "hash -p"},
		{"cd \"$d\" && rm x", "cd to a directory known only at run time"},
		{"cd - && rm x", "cd -"},
		{"false || cd sub; rm x", "after ||"},
		{"for v in 1 2; do rm x; cd sub; done", "cd inside a loop, which moves the commands before it on the next pass"},
		{"while true; do rm x; pushd sub; done", "pushd inside a loop"},
		{"echo $(cat <<EOF\nx\nEOF\nfind . ; -delete)", "a ; after a here-document inside $( ) or <( ), which bash 5.2 drops"},
		{"echo ${x@Z}", "a ${…} of a form zot does not know"},
		{"echo ${x", "a ${…} without its closing }"},
		{"echo \"${x:-'$(rm y)'}\"", "single quotes inside a ${…} within double quotes"},
		{"sh -c 'echo ${x:-\"}\"}'", "a ${…} with quotes, escapes or braces inside, which dash and bash delimit differently"},
		{"echo $(cat <<EOF\nx\nEOF); rm y", "a here-document line that starts like its end line"},
		{"cat <<EOF\nno end", "a here-document without its end line"},
		{strings.Repeat("(", 100) + "rm x", "nesting deeper than 64 levels"},
	}
	for _, tc := range cases {
		split := SplitCommandLine(tc.line, testShell(t.TempDir()))
		if !strings.Contains(strings.Join(split.Unfollowed, "\n"), tc.want) {
			t.Errorf("%q: unfollowed %q, want one naming %q", tc.line, split.Unfollowed, tc.want)
		}
	}
}

// What models usually write must not ask: a gate that asks about
// everything is switched off.
func TestSplitterFollowsOrdinaryLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src", "pkg"), 0o755)
	for _, line := range []string{
		"go test ./... 2>&1 | tail -20",
		"cd src && go build ./... && cd pkg && go vet .",
		"mkdir -p build && cd build && cmake .. && make -j4",
		"(cd src && ls -la)",
		"git status --short && git diff --stat HEAD~1",
		"find . -name '*.go' -not -path './vendor/*' | xargs grep -n 'TODO' | head",
		"find . -type f -name '*.tmp' -delete",
		"find . -name \"$pattern\" -newer \"$ref\" -print",
		"env A=\"$x\" B=\"$(date)\" make",
		"find src -name '*.go' -exec gofmt -l {} +",
		"for f in *.go; do echo \"$f\"; wc -l \"$f\"; done",
		"i=0; while [ $i -lt 3 ]; do i=$((i+1)); echo $i; done",
		"for ((i=0; i<3; i++)); do echo $i; done",
		"if [ -f go.mod ]; then cat go.mod; else echo none; fi",
		"cat > notes.md <<'EOF'\n# Notes\n$(not run)\nEOF",
		"grep -rn \"func main\" --include='*.go' . || true",
		"export GOFLAGS=-mod=mod; go list -m all | head",
		"ls ~/.config 2>/dev/null; echo ${HOME}",
		"timeout 60 go test -run TestX -v ./...",
		"sudo -u deploy env STAGE=prod bash -c 'systemctl restart app'",
		"python3 -c 'print(1)'; python3 script.py --flag",
		"echo \"${arr[@]}\" \"${#arr[@]}\" \"${name:-default}\" \"${name//a/b}\"",
		"[[ -n $x && $x == y* ]] && echo match",
		"read -r first rest < file.txt; echo \"$first\"",
		"pushd src >/dev/null && ls && popd >/dev/null",
		"npm ci && npm test -- --watch=false",
		"curl -fsSL https://example.com/x.tar.gz | tar -xz -C /tmp",
		"docker run --rm -v \"$PWD\":/w -w /w golang:1.22 go test ./...",
		"set -euo pipefail; make test",
		"n=$(ls | wc -l); echo \"$n files\"",
		"printf '%s\\n' a b c | sort -u",
	} {
		if u := SplitCommandLine(line, testShell(dir)).Unfollowed; len(u) > 0 {
			t.Errorf("%q: unfollowed %q", line, u)
		}
	}
}

// The directory each command runs in follows cd, pushd and popd, stops at
// the end of a subshell, and is "" — with a reason — where zot cannot
// tell.
func TestSplitterFollowsTheWorkingDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.MkdirAll(filepath.Join(dir, "c"), 0o755)
	a, ab, c := filepath.Join(dir, "a"), filepath.Join(dir, "a", "b"), filepath.Join(dir, "c")
	if err := os.Symlink(ab, filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	sh := testShell(dir)
	sh.Getenv = func(k string) string { return map[string]string{"HOME": c}[k] }
	cases := []struct {
		line string
		dirs []string // of the commands named x, in order
	}{
		{"x; cd a && x && cd b && x && cd .. && x", []string{dir, a, ab, a}},
		{"cd a; x; cd b; x", []string{a, ""}}, // the first x may have removed b
		{"(cd a; x); x", []string{a, dir}},
		{"cd a && (cd b && x) && x", []string{ab, a}},
		{"x $(cd a; x) `cd c && x`; x", []string{a, c, dir, dir}},
		{"pushd a && x && pushd b && x && popd && x && popd && x", []string{a, ab, a, dir}},
		{"cd a | x; x", []string{dir, dir}},
		{"cd a & x", []string{dir}},
		// & puts the whole && || list in the background, not only its
		// last command.
		{"cd a && x & x", []string{a, dir}},
		{"pushd a >/dev/null || true & x", []string{dir}},
		{"{ cd a; } & x", []string{dir}},
		{"pushd a; { pushd b && true & }; popd; x", []string{dir}},
		{"pushd a; case y in y) pushd b;; z) true & ;; esac; popd; x", []string{""}}, // not the start directory
		{"env -C a x; env --chdir=c x; x", []string{a, c, dir}},
		{"bash -c 'cd a; x'; x", []string{a, dir}},
		{"cd " + a + "; x; cd && x", []string{a, c}},
		{"cd ~/src && x; cd ~ && x", []string{filepath.Join(c, "src"), c}},
		{"cd missing && x && x; x", []string{filepath.Join(dir, "missing"), filepath.Join(dir, "missing"), ""}},
		{"true && cd a && x; x", []string{a, ""}},
		{"cd a || exit; x", []string{a}},
		{"cd a b; x", []string{dir}},
		{"if true; then cd a; fi; x", []string{""}},
		{"cd \"$d\"; x; cd / && x", []string{"", "/"}},
		{"find . -execdir x {} \\;", []string{""}},
		{"sudo -D c x; sudo -i x", []string{c, ""}},
		{"command cd a; x && builtin cd b && x", []string{a, ab}},
		// A cd may fail where the directory was there when zot looked:
		// bash then runs what follows where it was.
		{"mv a gone; cd a; x", []string{""}},
		{"rm -r a; cd a || x", []string{""}},
		{"command rmdir c; cd c; x", []string{""}},
		{"chmod 0 a; echo $(cd a; x)", []string{""}},
		{"echo; pwd; cd a; x", []string{a}},
		// A here-document's $( ) runs when its command does, before what
		// follows it on the line, though its body is read after.
		{"cat <<EOF; cd a\n$(x)\nEOF", []string{dir}},
		{"cd a && cat <<EOF &\n$(x)\nEOF\nx", []string{a, dir}},
		{"echo <<EOF; cd a; x\n$(rmdir a)\nEOF", []string{""}},
		// A redirection that fails skips its cd; /dev/null and 0–2 do not.
		{"cd a </nonexist; x", []string{""}},
		{"pushd a >/nonexist/f; x", []string{""}},
		{"cd a >/dev/null 2>&1; x", []string{a}},
		// pushd's options, and changes to its stack that may not run.
		{"pushd -- a; x", []string{""}},
		{"pushd -n a >/dev/null; popd >/dev/null; x", []string{""}},
		{"pushd a >/dev/null; if false; then dirs -c; fi; popd >/dev/null; x", []string{""}},
		{"pushd a; if false; then pushd b; fi; popd; x", []string{""}},
		{"pushd a; pushd missing; popd; x", []string{""}},
		{"pushd a; cd \"$d\"; cd / && popd && x", []string{dir}},
		// Words that may expand to none, and options bash refuses.
		{"cd $UNSET a; x", []string{""}},
		{"cd -@ a; x", []string{dir}},
		// .. after a name, and the real path of a link (l is a link to
		// a/b): bash's cd fails through a missing name or a file, cd -P,
		// env -C and a new shell whose $PWD is not passed go where the
		// link leads.
		{"cd missing/../a; x", []string{""}},
		{"cd f/../a; x", []string{""}},
		{"cd l/../b && x", []string{""}},
		{"cd -P l/..; x", []string{a}},
		{"cd l; cd -P ..; x", []string{a}},
		{"ln -sfn c l && cd -P l && x", []string{""}},
		{"env -C l/.. x", []string{a}},
		{"env -C l bash -c 'cd ..; x'", []string{a}},
		{"cd l; env -u PWD bash -c 'cd ..; x'", []string{""}},
		{"cd l; PWD=/ bash -c 'cd ..; x'", []string{""}},
		{"cd l; bash -c 'cd ..; x'", []string{dir}},
	}
	for _, tc := range cases {
		var got []string
		for _, cmd := range SplitCommandLine(tc.line, sh).Commands {
			if cmd.Name == "x" {
				got = append(got, cmd.Cwd)
			}
		}
		if strings.Join(got, "|") != strings.Join(tc.dirs, "|") {
			t.Errorf("%q: x ran in %q, want %q", tc.line, got, tc.dirs)
		}
	}
}

// Where bash is absent the line is read as dash reads it, and what bash
// would read differently asks.
func TestSplitterReadsPOSIXShWhereBashIsAbsent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	sh := testShell(dir)
	sh.Bash = false
	cases := []struct{ line, runs, want string }{
		{"echo hi &>/dev/null rm victimB", "rm", "&>"},
		{`echo $'a\' ; rm victimC`, "rm", "$'…'"},
		{"((rm victimA))", "rm", "(("},
		{"{rm,x}", "", "brace expansion"},
		{"[[ -f x ]] && rm y", "[[", "the keyword [["},
		{"cat <<< x", "cat", "<<<"},
		{"diff <(ls) <(ls)", "ls", "process substitution"},
		{"a=(1 2)", "", "an array assignment"},
		{"echo hi |& rm x", "rm", "|&"},
		{"time -p rm x", "time", "the keyword time"},
		{"function f { rm x; }", "function", "the keyword function"},
		{"echo $[1+1]", "echo", "$[…]"},
	}
	for _, tc := range cases {
		split := SplitCommandLine(tc.line, sh)
		var names []string
		for _, c := range split.Commands {
			names = append(names, c.Name)
		}
		if tc.runs != "" && !strings.Contains(" "+strings.Join(names, " ")+" ", " "+tc.runs+" ") {
			t.Errorf("%q: commands %v, want %s among them (as dash runs it)", tc.line, names, tc.runs)
		}
		if !strings.Contains(strings.Join(split.Unfollowed, "\n"), tc.want) || !strings.Contains(strings.Join(split.Unfollowed, "\n"), "/bin/sh may read differently") {
			t.Errorf("%q: unfollowed %q, want one naming %q", tc.line, split.Unfollowed, tc.want)
		}
	}
	if u := SplitCommandLine("cd sub 2>/dev/null || exit 1; ls -la | grep x > out", sh).Unfollowed; len(u) != 0 {
		t.Errorf("POSIX line: %q", u)
	}
	// dash has no pushd; its cd takes -L and -P only, and more than one
	// argument its own way.
	sub := filepath.Join(dir, "sub")
	for line, want := range map[string]string{"pushd sub; ls": dir, "cd -e sub; ls": dir, "cd sub other; ls": "", "cd -P sub; ls": sub} {
		if c := SplitCommandLine(line, sh).Commands; c[len(c)-1].Cwd != want {
			t.Errorf("%q in dash: ls in %q, want %q", line, c[len(c)-1].Cwd, want)
		}
	}
}

// On file systems that ignore case RM runs rm: names are folded, and a
// validator for rm is asked about RM.
func TestCommandNamesFoldWhereFileNamesIgnoreCase(t *testing.T) {
	t.Parallel()
	sh := testShell(t.TempDir())
	sh.FoldCase = true
	var names []string
	for _, c := range SplitCommandLine("RM x; SUDO Rm y; /BIN/rM z; ENV -S 'RM w'", sh).Commands {
		names = append(names, c.Name)
	}
	if strings.Join(names, " ") != "rm sudo rm rm env rm" {
		t.Errorf("folded: %v", names)
	}
	v := testValidator(t, "deny-rm", "deny_rm.sh")
	v.Commands = []string{"rm"}
	if r := checkCommandLine(context.Background(), []Validator{v}, nil, "RM -rf x", sh); r.Decision != "deny" || len(r.Answers) != 1 {
		t.Errorf("RM with a validator for rm: %s %+v", r.Decision, r.Answers)
	}
	v.Commands = []string{"Rm"}
	if !v.appliesTo("rm", true) || v.appliesTo("rm", false) {
		t.Error("commands filter: folds only where file names ignore case")
	}
	sh.FoldCase = false
	if names := SplitCommandLine("RM x", sh).Commands; names[0].Name != "RM" {
		t.Errorf("not folded: %s", names[0].Name)
	}
}

// Wrappers are read by their getopt grammar: values taken by each option,
// clusters, attached values, abbreviations of long options, optional
// values, -- and the first operand ending the options.
func TestWrappersAreReadByTheirOptionGrammar(t *testing.T) {
	t.Parallel()
	cases := []struct{ line, cmd string }{
		{"timeout -s KILL 5 rm x", `rm x`},
		{"timeout --signal=KILL -k5 5s rm x", `rm x`},
		{"timeout --kill 1 5 rm x", `rm x`},
		{"nice -n5 rm x", `rm x`},
		{"nice -5 rm x", `rm x`},
		{"nice --adj=5 rm x", `rm x`},
		{"stdbuf -oL -e0 rm x", `rm x`},
		{"env -iu A -C/tmp B=1 rm x", `rm x`},
		{"env -S'-u B A=1 rm' x", `rm x`},
		{"env -vS 'rm -f' -- x", `rm -f -- x`},
		{"env -S '-i' -- rm x", `rm x`},
		{"xargs -n 1 -P4 rm -f", `rm -f`},
		{"xargs -I % rm %", `rm %`},
		{"xargs -i rm {}", `rm {}`},
		{"xargs --replace rm x", `rm x`},
		{"xargs --replace=Q rm Q", `rm Q`},
		{"xargs -e rm x", `rm x`},
		{"xargs -eEND rm x", `rm x`},
		{"xargs -l rm x", `rm x`},
		{"xargs --max-lines rm x", `rm x`},
		{"xargs -L 1 rm x", `rm x`},
		{"xargs -0r -a list rm", `rm`},
		{"sudo -u root -g wheel -E rm x", `rm x`},
		{"sudo -sE rm x", `rm x`},
		{"sudo --preserve-env=A,B rm x", `rm x`},
		{"sudo -- rm x", `rm x`},
		{"doas -u root rm x", `rm x`},
		{"command -p rm x", `rm x`},
		{"exec -a name rm x", `rm x`},
		{"time -p rm x", `rm x`},
		{"time -p -- rm x", `rm x`},
		{`\time -f %e -o out rm x`, `rm x`},
		{"setsid -fw rm x", `rm x`},
		{"taskset -c 0-3 rm x", `rm x`},
		{"ionice -c2 -n 7 rm x", `rm x`},
		{"chrt -f 10 rm x", `rm x`},
		{"chrt --idle rm x", `rm x`},
		{"flock -w 5 /tmp/l rm x", `rm x`},
		{"flock /tmp/l -c 'rm x'", `rm x`},
		{"watch -n 1 -x rm x", `rm x`},
		{"watch -d=permanent 'rm x'", `rm x`},
		{"unbuffer -p rm x", `rm x`},
		{"busybox rm x", `rm x`},
		{"runuser -u bob -- rm x", `rm x`},
		{"find . -name -exec -o -exec rm {} \\;", `rm {}`},
		{"find . -path '*/x' -prune -o -exec rm {} +", `rm {}`},
		{"find . -fprintf out -exec -exec rm {} \\;", `rm {}`},
		{"find . -exec echo + \\; -exec rm {} \\;", `rm {}`},
		{"find -L . -exec rm {} \\;", `rm {}`},
	}
	for _, tc := range cases {
		split := SplitCommandLine(tc.line, testShell("/"))
		found := false
		for _, c := range split.Commands {
			found = found || strings.Join(c.Words, " ") == tc.cmd && (c.Via != "" || strings.HasPrefix(tc.line, "time"))
		}
		if !found || len(split.Unfollowed) > 0 {
			var got []string
			for _, c := range split.Commands {
				got = append(got, strings.Join(c.Words, " ")+" via "+c.Via)
			}
			t.Errorf("%q: commands %q, unfollowed %q; want %q unwrapped", tc.line, got, split.Unfollowed, tc.cmd)
		}
	}
	// Options that end the program's work run no command.
	for _, line := range []string{"sudo -l rm x", "sudo -e f", "command -v rm", "timeout --help rm", "env --version rm", "taskset -p 1 rm"} {
		for _, c := range SplitCommandLine(line, testShell("/")).Commands {
			if c.Name == "rm" {
				t.Errorf("%q: reported rm", line)
			}
		}
	}
}

// shellStartupProblems: what zot's environment makes bash run before the
// line is not seen, so every line asks.
func TestShellStartupVariablesAsk(t *testing.T) {
	t.Parallel()
	got := shellStartupProblems([]string{"HOME=/h", "BASH_ENV=/h/x.sh", "BASH_FUNC_ls%%=() { rm x; }", "SHELLOPTS=xtrace"})
	if len(got) != 3 || !strings.Contains(got[0], "BASH_ENV") || !strings.Contains(got[1], "bash function ls") || !strings.Contains(got[2], "SHELLOPTS") {
		t.Errorf("%q", got)
	}
}
