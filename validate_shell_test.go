package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// renderCommands shows each simple command of a line as validators see it:
// the name, the flags sorted (-name=value), then the arguments quoted.
func renderCommands(line string) []string {
	cmds := SplitCommandLine(line, testShell("/work")).Commands
	out := []string{}
	for _, c := range cmds {
		flags, args := commandFlags(c.Name, c.Words[1:])
		keys := make([]string, 0, len(flags))
		for k := range flags {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := []string{c.Name}
		for _, k := range keys {
			parts = append(parts, "-"+k+"="+flags[k])
		}
		for _, a := range args {
			parts = append(parts, strconv.Quote(a))
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// testShell is bash starting in dir, with HOME=/home/u and SHELL=/bin/bash
// and nothing else in its environment.
func testShell(dir string) ShellContext {
	env := map[string]string{"HOME": "/home/u", "SHELL": "/bin/bash"}
	return ShellContext{Bash: true, Cwd: dir, Getenv: func(k string) string { return env[k] }}
}

// splitterCases are command lines and the simple commands in them, in order.
var splitterCases = []struct {
	line string
	want []string
}{
	// words, quotes, escapes
	{`ls`, []string{`ls`}},
	{`ls -la /tmp`, []string{`ls -a= -l= "/tmp"`}},
	{`echo "a b" 'c d' e\ f`, []string{`echo "a b" "c d" "e f"`}},
	{`echo "it's" 'say "hi"' "\$x \"q\" \\"`, []string{`echo "it's" "say \"hi\"" "$x \"q\" \\"`}},
	{`c""url -X POST x`, []string{`curl -X=POST "x"`}},
	{`\curl x`, []string{`curl "x"`}},
	{`/usr/bin/curl -X PUT x`, []string{`curl -X=PUT "x"`}},
	{`$'cu\x72l' -X POST u`, []string{`curl -X=POST "u"`}},
	{`echo 'unclosed`, []string{`echo "unclosed"`}},
	{"curl \\\n  -X POST \\\n  x", []string{`curl -X=POST "x"`}},
	{`rm -- -rf`, []string{`rm "-rf"`}},
	{`echo -`, []string{`echo "-"`}},

	// flags and their values
	{`curl -X POST https://api.example.com`, []string{`curl -X=POST "https://api.example.com"`}},
	{`curl --request=POST --silent https://x`, []string{`curl -request=POST -silent= "https://x"`}},
	{`curl --request POST https://x`, []string{`curl -request=POST "https://x"`}},
	{`curl -XPOST -sSL https://x`, []string{`curl -L= -S= -X=POST -s= "https://x"`}},
	{`curl -sX POST x`, []string{`curl -X=POST -s= "x"`}},
	{`curl -H 'A: b' -d @f.json x`, []string{`curl -H=A: b -d=@f.json "x"`}},
	{`git -C repo push --force origin main`, []string{`git -C=repo -force= "push" "origin" "main"`}},
	{`git commit -am "fix: it"`, []string{`git -a= -m=fix: it "commit"`}},
	{`kubectl -n prod delete pod x`, []string{`kubectl -n=prod "delete" "pod" "x"`}},
	{`aws --profile prod s3 cp a s3://b --recursive`, []string{`aws -profile=prod -recursive= "s3" "cp" "a" "s3://b"`}},
	{`tar -xzf a.tgz -C /tmp`, []string{`tar -C=/tmp -f=a.tgz -x= -z=`}},
	{`grep -e foo -A 3 file`, []string{`grep -A=3 -e=foo "file"`}},
	{`python3 -c 'import os' arg`, []string{`python3 -c=import os "arg"`}},
	{`mysql -psecret -e 'drop table x' db`, []string{`mysql -e=drop table x -p=secret "db"`}},
	{`sed -i.bak -e s/a/b/ f`, []string{`sed -e=s/a/b/ -i=.bak "f"`}},
	{`ssh -i key host rm -rf /`, []string{`ssh -i=key "host" "rm" "-rf" "/"`}},
	{`docker run --rm -it -v /:/host alpine rm -rf /host`, []string{`docker -i= -rm= -t= -v=/:/host "run" "alpine" "rm" "-rf" "/host"`}},
	{`terraform apply -var env=prod -auto-approve`, []string{`terraform -auto-approve= -var=env=prod "apply"`}},
	{`ssh -p 2222 host -- true`, []string{`ssh -p=2222 "host" "--" "true"`}},

	// lists and pipelines
	{`a; b && c || d | e & f`, []string{`a`, `b`, `c`, `d`, `e`, `f`}},
	{"a\nb\n\nc", []string{`a`, `b`, `c`}},
	{`a | b |& c`, []string{`a`, `b`, `c`}},
	{`cat file | sh`, []string{`cat "file"`, `sh`}},
	{`echo a;;`, []string{`echo "a"`}},
	{`)`, []string{}},

	// substitutions and subshells
	{`echo $(curl -s x)`, []string{`curl -s= "x"`, `echo "$(curl -s x)"`}},
	{"echo `wget -q y`", []string{`wget -q= "y"`, "echo \"`wget -q y`\""}},
	{`echo "$(rm -rf /tmp/a)"`, []string{`rm -f= -r= "/tmp/a"`, `echo "$(rm -rf /tmp/a)"`}},
	{`echo "unclosed $(curl x`, []string{`curl "x"`, `echo "unclosed $(curl x"`}},
	{`x=$(date +%s)`, []string{`date "+%s"`}},
	{`(cd sub && make -j4)`, []string{`cd "sub"`, `make -j=4`}},
	{`{ echo a; echo b; } > out`, []string{`echo "a"`, `echo "b"`}},
	{`diff <(sort a) <(sort b)`, []string{`sort "a"`, `sort "b"`, `diff "<(sort a)" "<(sort b)"`}},
	{`echo ${HOME:-$(whoami)}`, []string{`whoami`, `echo "${HOME:-$(whoami)}"`}},
	{`echo $((1 + $(id -u)))`, []string{`id -u=`, `echo "$((1 + $(id -u)))"`}},
	{`echo $((echo hi) )`, []string{`echo "hi"`, `echo "$((echo hi) )"`}},
	{`arr=(one $(two) three)`, []string{`two`}},
	{"echo `echo \\`date\\``", []string{`date`, "echo \"`date`\"", "echo \"`echo \\\\`date\\\\``\""}},

	// compound commands and keywords
	{`while read l; do echo "$l"; done < <(find . -type f)`, []string{`read "l"`, `echo "$l"`, `find -type=f "."`}},
	{`if grep -q x f; then rm f; else touch g; fi`, []string{`grep -q= "x" "f"`, `rm "f"`, `touch "g"`}},
	{`for f in $(ls); do cat "$f"; done`, []string{`ls`, `cat "$(ls)"`}}, // the loop variable carries the expression it ranges over
	{`for ((i=0; i<3; i++)); do echo $i; done`, []string{`echo "$i"`}},
	{`case "$1" in start) svc up;; stop|halt) svc down;; *) echo usage;; esac`, []string{`svc "up"`, `svc "down"`, `echo "usage"`}},
	{`case x in (a) echo a;; esac; echo after`, []string{`echo "a"`, `echo "after"`}},
	{`f() { curl -X POST x; }; f`, []string{`curl -X=POST "x"`, `f`}},
	{`function g { rm -rf "$1"; }`, []string{`rm -f= -r= "$1"`}},
	{`[[ -f a && -d b ]] && echo yes`, []string{`echo "yes"`}},
	{`[ -f a ] && echo yes`, []string{`[ -f= "a" "]"`, `echo "yes"`}},
	{`time -p make`, []string{`make`}},
	{`! curl x`, []string{`curl "x"`}},

	// comments
	{`echo a # rm -rf /`, []string{`echo "a"`}},
	{`# only a comment`, []string{}},
	{`echo a#b`, []string{`echo "a#b"`}},

	// redirections
	{`ls 2>/dev/null >out <in`, []string{`ls`}},
	{`echo hi >&2`, []string{`echo "hi"`}},
	{`cmd &> log; cmd2 >> log 2>&1`, []string{`cmd`, `cmd2`}},

	// here-documents and here-strings
	{"cat <<EOF\nrm -rf /\nEOF\necho after", []string{`cat`, `echo "after"`}},
	{"cat <<'EOF'\n$(rm -rf /)\nEOF", []string{`cat`}},
	{"cat <<EOF\n$(whoami)\nEOF", []string{`cat`, `whoami`}},
	{"cat <<-EOF\n\trm x\n\tEOF\necho z", []string{`cat`, `echo "z"`}},
	{"cat <<A <<B\nx\nA\ny\nB\necho z", []string{`cat`, `echo "z"`}},
	{"bash script.sh <<'EOF'\nrm -rf /x\nEOF", []string{`bash "script.sh"`}},
	{`grep x <<< "$(curl y)"`, []string{`curl "y"`, `grep "x"`}},

	// assignments
	{`AWS_PROFILE=prod aws s3 rm s3://b --recursive`, []string{`aws -recursive= "s3" "rm" "s3://b"`}},
	{`x=1 y=2`, []string{}},
	{`"A=1" cmd`, []string{`A=1 "cmd"`}},

	// wrappers
	{`sudo rm -rf /`, []string{`sudo "rm" "-rf" "/"`, `rm -f= -r= "/"`}},
	{`sudo -u admin -E systemctl restart nginx`, []string{`sudo -E= -u=admin "systemctl" "restart" "nginx"`, `systemctl "restart" "nginx"`}},
	{`env -i PATH=/bin curl x`, []string{`env -i= "PATH=/bin" "curl" "x"`, `curl "x"`}},
	{`env -S 'curl -X POST' x`, []string{`env -S=curl -X POST "x"`, `curl -X=POST "x"`}},
	{`nice -n 10 make`, []string{`nice -n=10 "make"`, `make`}},
	{`timeout -s KILL 5s curl x`, []string{`timeout -s=KILL "5s" "curl" "x"`, `curl "x"`}},
	{`find . -name '*.tmp' | xargs -0 -n 10 rm -f`, []string{`find -name=*.tmp "."`, `xargs -0= -n=10 "rm" "-f"`, `rm -f=`}},
	{`bash -c 'curl -X DELETE u && echo ok'`, []string{`bash -c=curl -X DELETE u && echo ok`, `curl -X=DELETE "u"`, `echo "ok"`}},
	{`sh -ec "git push --force"`, []string{`sh -c=git push --force -e=`, `git -force= "push"`}},
	{`sudo bash -c "sudo rm -rf /x"`, []string{`sudo "bash" "-c" "sudo rm -rf /x"`, `bash -c=sudo rm -rf /x`, `sudo "rm" "-rf" "/x"`, `rm -f= -r= "/x"`}},
	{`find . -name '*.go' -exec gofmt -w {} +`, []string{`find -exec=gofmt -name=*.go -w= "." "{}" "+"`, `gofmt -w= "{}"`}},
	{`nohup ./server --port 8080 &`, []string{`nohup "./server" "--port" "8080"`, `server -port= "8080"`}},
	{`stdbuf -oL tail -f log`, []string{`stdbuf -o=L "tail" "-f" "log"`, `tail -f= "log"`}},
	{`command -v curl`, []string{`command -v= "curl"`}},
	{`exec curl x`, []string{`exec "curl" "x"`, `curl "x"`}},
	{`sudo -e /etc/hosts`, []string{`sudo -e= "/etc/hosts"`}},
	{`bash script.sh -c x`, []string{`bash "script.sh" "-c" "x"`}},
	// watch runs its words joined with spaces through sh -c, unless -x
	{`watch -n1 -t "curl -X POST https://x"`, []string{`watch -n=1 -t= "curl -X POST https://x"`, `curl -X=POST "https://x"`}},
	{`watch -n 5 curl -X POST https://x`, []string{`watch -n=5 "curl" "-X" "POST" "https://x"`, `curl -X=POST "https://x"`}},
	{`watch 'kubectl get pods | grep Crash'`, []string{`watch "kubectl get pods | grep Crash"`, `kubectl "get" "pods"`, `grep "Crash"`}},
	{`watch --interval=2 -- 'rm -rf /tmp/x; ls'`, []string{`watch -interval=2 "rm -rf /tmp/x; ls"`, `rm -f= -r= "/tmp/x"`, `ls`}},
	{`watch -d curl 'a;b'`, []string{`watch -d= "curl" "a;b"`, `curl "a"`, `b`}},
	{`watch -x curl 'a;b'`, []string{`watch -x= "curl" "a;b"`, `curl "a;b"`}},
	{`watch -tx -n 2 curl x`, []string{`watch -n=2 -t= -x= "curl" "x"`, `curl "x"`}},
	{`watch --exec sh -c 'curl x'`, []string{`watch -exec= "sh" "-c" "curl x"`, `sh -c=curl x`, `curl "x"`}},
}

func TestSplitCommandLineTable(t *testing.T) {
	t.Parallel()
	if len(splitterCases) < 60 {
		t.Fatalf("only %d cases", len(splitterCases))
	}
	for _, tc := range splitterCases {
		got := renderCommands(tc.line)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%q\n got  %s\n want %s", tc.line, fmtList(got), fmtList(tc.want))
		}
	}
}

func fmtList(l []string) string {
	var b strings.Builder
	for _, s := range l {
		fmt.Fprintf(&b, "\n    %s", s)
	}
	return b.String()
}

func TestSplitCommandLineEnvAndWrappers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		line, name, env, via string
	}{
		{`AWS_PROFILE=prod aws s3 ls`, "aws", "AWS_PROFILE=prod", ""},
		{`env AWS_PROFILE=prod aws s3 ls`, "aws", "AWS_PROFILE=prod", "env"},
		{`export AWS_PROFILE=prod; aws s3 ls`, "aws", "AWS_PROFILE=prod", ""},
		{`AWS_PROFILE=prod; aws s3 ls`, "aws", "AWS_PROFILE=prod", ""},
		{`AWS_PROFILE=prod bash -c 'aws s3 ls'`, "aws", "AWS_PROFILE=prod", "bash -c"},
		{`sudo AWS_PROFILE=prod aws s3 ls`, "aws", "AWS_PROFILE=prod", "sudo"},
		{`sudo bash -c 'nice curl x'`, "curl", "", "sudo > bash -c > nice"},
		{`echo $(AWS_PROFILE=dev aws s3 ls)`, "aws", "AWS_PROFILE=dev", ""},
	}
	for _, tc := range cases {
		cmds := SplitCommandLine(tc.line, testShell("/work")).Commands
		var found *ShellCommand
		for i := range cmds {
			if cmds[i].Name == tc.name {
				found = &cmds[i]
			}
		}
		if found == nil {
			t.Errorf("%q: no %s in %v", tc.line, tc.name, renderCommands(tc.line))
			continue
		}
		var env []string
		for k, v := range found.Env {
			env = append(env, k+"="+v)
		}
		sort.Strings(env)
		if strings.Join(env, " ") != tc.env || found.Via != tc.via {
			t.Errorf("%q: %s env %v via %q, want %q via %q", tc.line, tc.name, env, found.Via, tc.env, tc.via)
		}
	}
}

func TestSplitCommandLineRawIsTheCommandsText(t *testing.T) {
	t.Parallel()
	cmds := SplitCommandLine("A=1 curl -X POST 'x y' 2>&1 | if true; then grep -q z; fi", testShell("/work")).Commands
	var raws []string
	for _, c := range cmds {
		raws = append(raws, c.Raw)
	}
	want := []string{"A=1 curl -X POST 'x y' 2>&1", "true", "grep -q z"}
	if strings.Join(raws, "|") != strings.Join(want, "|") {
		t.Errorf("raw = %q, want %q", raws, want)
	}
}

// A line nested beyond what the splitter follows is reported, never
// silently cut short.
func TestSplitCommandLineTooDeepIsIncomplete(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		strings.Repeat("$(", 200) + "curl x" + strings.Repeat(")", 200),
		strings.Repeat("(", 10000) + "curl x",
		strings.Repeat("bash -c '", 1) + strings.Repeat(`eval `, 100) + "curl x'",
		strings.Repeat("sudo ", 500) + "curl x",
		strings.Repeat("$((", 300) + "1",
	} {
		if len(SplitCommandLine(line, testShell("/work")).Unfollowed) == 0 {
			t.Errorf("%.40q… reported complete", line)
		}
	}
	if u := SplitCommandLine("echo "+strings.Repeat("$(echo ", 20)+"curl x"+strings.Repeat(")", 20), testShell("/work")).Unfollowed; len(u) > 0 {
		t.Error("20 levels reported incomplete")
	}
}

// TestShellQuoteIsReadBackAsOneWord: the splitter reads a quoted word back
// as that word, whatever it holds.
func TestShellQuoteIsReadBackAsOneWord(t *testing.T) {
	t.Parallel()
	for _, w := range []string{"plain", "-m", "--a=b", "fix bug", "", "it's", `"q"`, `a\b`, "$HOME", "`x`", "$(rm -rf /)",
		"a;b", "a|b", "a && b", "*.go", "~", "#c", "x\ny", "tab\there", "'", "''", "é"} {
		split := SplitCommandLine("echo "+shellQuote(w), testShell("/work"))
		cmds := split.Commands
		if len(split.Unfollowed) > 0 || len(cmds) != 1 || len(cmds[0].Words) != 2 || cmds[0].Words[1] != w {
			t.Errorf("%q quoted as %s reads back as %+v", w, shellQuote(w), cmds)
		}
	}
	if got := shellQuote("commit"); got != "commit" {
		t.Errorf("a plain word is quoted: %s", got)
	}
}

// The attacker is the model, which writes the line: one that ends inside
// an ANSI-C quote inside a ${…}, on its escaping backslash, crashed the
// gate (found by FuzzSplitCommandLine). It is reported unfollowed, which
// the gate asks about.
func TestLinesEndingOnAnEscapeInsideAParameterAreUnfollowed(t *testing.T) {
	t.Parallel()
	for _, line := range []string{"${$'\\", "echo ${x:-$'\\", "\"${x#$'\\"} {
		if len(SplitCommandLine(line, testShell("/work")).Unfollowed) == 0 {
			t.Errorf("%q reported complete", line)
		}
	}
}

func FuzzSplitCommandLine(f *testing.F) {
	for _, tc := range splitterCases {
		f.Add(tc.line)
	}
	f.Add("$((((((((((")
	f.Add("case x in a) (b;; esac")
	f.Add("cat <<")
	f.Add("$'\\x")
	f.Fuzz(func(t *testing.T, line string) {
		for _, c := range SplitCommandLine(line, testShell("/work")).Commands {
			if len(c.Words) == 0 {
				t.Fatalf("%q: a command without words", line)
			}
			commandFlags(c.Name, c.Words[1:])
		}
	})
}

// TestWrappersThatRunACommandAreUnwrapped: a validator limited to curl must
// see curl whichever wrapper runs it.
func TestWrappersThatRunACommandAreUnwrapped(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		"setsid curl x", `su -s /bin/bash -c "curl x"`, `su root -s /bin/sh -c 'curl x'`, "flock /tmp/l curl x", `flock /tmp/l -c "curl x"`,
		"ionice -c2 -n7 curl x", "chroot / curl x", "watch -n 1 curl x", `script -qc "curl x" /dev/null`,
		"unbuffer curl x", "busybox curl x", "unshare -r curl x", "nsenter -t 1 -m curl x",
		`runuser -u bob -- curl x`, `runuser bob -s /bin/bash -c 'curl x'`,
		"taskset 0x3 curl x", "taskset -c 0-3 curl x", "chrt -f 10 curl x", `sg wheel -c "curl x"`,
	} {
		cmds := SplitCommandLine(line, testShell("/work")).Commands
		found := false
		for _, c := range cmds {
			if c.Name == "curl" {
				found = true
			}
		}
		if !found {
			var names []string
			for _, c := range cmds {
				names = append(names, c.Name)
			}
			t.Errorf("%s: commands %v, no curl", line, names)
		}
	}
}
