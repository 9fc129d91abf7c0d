package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
)

// What a simple command runs, as validators see it: the builtins the
// splitter follows (cd, read, declare …) or refuses to guess about (eval,
// trap, source …), and the wrappers it unwraps by their real option
// grammar (sudo, env, xargs, find -exec, bash -c …). An option a wrapper's
// table does not know, or a wrapper argument known only at run time, is
// not guessed at: it is Unfollowed.

// cmdReach is how a simple command was reached.
type cmdReach struct {
	env    map[string]string
	via    string
	raw    string // the text validators are shown for it
	dir    string // its working directory; "" when unknown, then dirWhy says why
	dirWhy string
	level  int  // wrappers unwrapped on the way
	open   bool // the program gets more arguments at run time (xargs, find -exec … {} +)
	shell  bool // the shell runs it itself: builtins apply, a cd moves the shell
	// subshell: … in a subshell (a pipeline stage, a background job), so
	// a cd moves nothing after it.
	subshell bool
	// redirected: a redirection of its own may fail, and then it does not
	// run.
	redirected bool
	vars       []string // the variables whose values the words hold
}

// through is the reach of the command a wrapper runs.
func (r cmdReach) through(wrapper string) cmdReach {
	r.via, r.level, r.shell, r.subshell, r.open = joinVia(r.via, wrapper), r.level+1, false, false, false
	return r
}

func joinVia(outer, inner string) string {
	if outer == "" {
		return inner
	}
	return outer + " > " + inner
}

// run records a simple command and follows what it runs.
func (p *shellParser) run(ws []shellWord, r cmdReach) {
	if p.depth+r.level >= maxShellDepth {
		p.markTooDeep()
		return
	}
	first := ws[0]
	known := first.literal || tildePath(first)
	name := first.val
	if known {
		name = p.commandName(name)
	}
	vals := make([]string, len(ws))
	var shapes []WordShape
	for i, w := range ws {
		vals[i] = w.val
		if len(w.holes) > 0 {
			if shapes == nil {
				shapes = make([]WordShape, len(ws))
			}
			shapes[i] = WordShape{Holes: w.holes, Glob: w.glob}
		}
	}
	exact := !r.open && shapes == nil
	p.out.cmds = append(p.out.cmds, ShellCommand{Name: name, Words: vals, Env: r.env, Raw: r.raw, Via: r.via, Cwd: r.dir, Exact: exact, Vars: r.vars,
		Shapes: shapes, Open: r.open})
	if !known {
		p.unfollow("a command name known only at run time", r.raw)
		return
	}
	if r.dir == "" {
		p.unfollow("a command whose working directory zot cannot tell ("+r.dirWhy+")", r.raw)
	}
	args := ws[1:]
	switch name {
	case "cd", "pushd", "popd", "dirs":
		p.changeDir(name, args, r)
		if name != "dirs" && r.shell && !r.subshell {
			p.forgetVar("PWD", r.raw)
			p.forgetVar("OLDPWD", r.raw)
		}
	case "unset":
		// bash evaluates a subscript as arithmetic, in a subshell too:
		// unset "a[x]" runs what $x holds.
		for _, a := range args {
			if !a.literal {
				p.unfollow("unset of a name known only at run time, whose subscript bash would evaluate", r.raw)
			} else if i := strings.IndexByte(a.val, '['); i > 0 && strings.HasSuffix(a.val, "]") {
				p.arithUse(a.val[i+1:len(a.val)-1], r.raw)
			}
		}
		if r.shell && !r.subshell {
			p.unsetVars(args, r.raw)
		}
	case "eval":
		p.unfollow("eval, which runs a string as commands", r.raw)
	case "source", ".":
		p.unfollow(name+", which runs a file's commands", r.raw)
	case "trap":
		p.trap(args, r)
	case "fc":
		p.unfollow("fc, which reruns commands from history", r.raw)
	case "alias":
		for _, a := range args {
			if !a.literal || strings.Contains(a.val, "=") {
				p.unfollow("an alias definition", r.raw)
				break
			}
		}
	case "enable", "hash", "compgen", "complete", "bind":
		p.builtinOptions(name, args, r)
	case "let":
		for _, a := range args {
			p.arithOperand(a, r.raw)
		}
	case "set":
		p.setOptions(args, r)
	case "shopt":
		p.shoptOptions(args, r)
	case "read", "mapfile", "readarray", "printf", "getopts", "declare", "typeset", "local", "export", "readonly", "wait":
		p.assigningBuiltin(name, args, r)
	case "test", "[":
		p.checkTest(args, name+" -v", r.raw)
	case "command", "builtin":
		// They run a command, or a builtin, in the shell itself.
		_, rest, stopped, why := getopt(name, args, optTables()[name], false)
		if p.optionTrouble(why, rest, r) || stopped {
			return
		}
		inner := r
		inner.via, inner.level = joinVia(r.via, name), r.level+1
		p.run(rest, inner)
	case "sh", "dash", "ash", "bash":
		p.runShell(name, args, r)
	case "find":
		p.runFind(args, r)
	case "xargs":
		p.runXargs(args, r)
	case "env":
		p.runEnv(args, r)
	case "sudo":
		p.runSudo(args, r)
	case "doas":
		p.runDoas(args, r)
	case "su", "runuser":
		p.runSu(name, args, r)
	case "sg":
		p.runSg(args, r)
	case "script":
		p.runScript(args, r)
	case "flock":
		p.runFlock(args, r)
	case "watch":
		p.runWatch(args, r)
	case "nice":
		if len(args) > 0 && args[0].literal && isOldNice(args[0].val) {
			args = args[1:] // nice -10 cmd
		}
		p.runWrapper(name, args, r)
	case "busybox":
		if len(args) > 0 && args[0].literal && !strings.HasPrefix(args[0].val, "-") {
			p.run(args, r.through("busybox"))
		}
	default:
		switch {
		case wrapperSpecs[name].table != "":
			p.runWrapper(name, args, r)
		case unwrappedLaunchers[name]:
			p.unfollow(name+", which runs commands zot does not unwrap", r.raw)
		default:
			p.interpreter(name, args, r)
		}
	}
}

// commandName is the base name validators match: "curl" for /usr/bin/curl,
// folded to lower case where file names ignore it.
func (p *shellParser) commandName(w string) string {
	trimmed := strings.TrimRight(w, "/")
	if trimmed == "" {
		return w
	}
	name := trimmed[strings.LastIndexByte(trimmed, '/')+1:]
	if p.out.sc.FoldCase {
		name = strings.ToLower(name)
	}
	return name
}

// tildePath reports a ~/dir/name word: only its directory is known at run
// time, its base name is.
func tildePath(w shellWord) bool {
	return w.single && strings.HasPrefix(w.raw, "~/") && !strings.ContainsAny(w.raw[1:], "$`\\'\"*?[{~")
}

// startsAsOperand reports whether a word known only at run time still
// cannot be an option: its first character is a plain one, not -.
func startsAsOperand(w shellWord) bool {
	return w.raw != "" && strings.IndexByte("-$`\"'\\~{*?[<>(+", w.raw[0]) < 0
}

// Option grammars. A table lists a program's options as GNU getopt_long
// reads them: "-C/--chdir=" is -C or --chdir with a value (-Cdir, -C dir,
// --chdir=dir, --chdir dir, --ch=dir); "=?" an optional value, attached
// only (-i, -iR, --replace=R); "!" an option after which no command runs
// (--help, sudo -l). The canonical name of an option is its last spelling.
type optDef struct {
	name string
	arg  byte // 0, '=' or '?'
	stop bool
}

type optTable map[string]optDef

func parseOptTable(spec string) optTable {
	t := optTable{}
	for _, e := range strings.Fields(spec) {
		var d optDef
		if strings.HasSuffix(e, "!") {
			d.stop, e = true, strings.TrimSuffix(e, "!")
		}
		switch {
		case strings.HasSuffix(e, "=?"):
			d.arg, e = '?', strings.TrimSuffix(e, "=?")
		case strings.HasSuffix(e, "="):
			d.arg, e = '=', strings.TrimSuffix(e, "=")
		}
		names := strings.Split(e, "/")
		d.name = names[len(names)-1]
		for _, n := range names {
			t[n] = d
		}
	}
	return t
}

// long finds a long option by its name or a prefix of it that names one
// option only, as getopt_long does.
func (t optTable) long(k string) (optDef, bool) {
	if d, ok := t[k]; ok {
		return d, true
	}
	var found optDef
	n := 0
	for name, d := range t {
		if strings.HasPrefix(name, "--") && strings.HasPrefix(name, k) && (n == 0 || d.name != found.name) {
			found, n = d, n+1
		}
	}
	return found, n == 1
}

// parsedOpt is an option as read: its canonical name and value.
type parsedOpt struct {
	name string
	val  shellWord
	has  bool
	next int // index in args after it
}

// getopt reads the options at the front of args by t. It stops at the first
// operand (with permute, as su and script do, options may follow
// operands), after --, or at an option that ends the program's work
// (stopped). why, when set, says what it could not read: an option t does
// not know, a value missing, an option word known only at run time.
func getopt(prog string, args []shellWord, t optTable, permute bool) (opts []parsedOpt, operands []shellWord, stopped bool, why string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.literal {
			if !startsAsOperand(a) {
				return opts, operands, false, prog + " argument " + a.raw + " known only at run time"
			}
			if !permute {
				return opts, append(operands, args[i:]...), false, ""
			}
			if !a.single {
				return opts, operands, false, prog + " argument " + a.raw + ", which may split into several words"
			}
			operands = append(operands, a)
			continue
		}
		v := a.val
		switch {
		case v == "--":
			return opts, append(operands, args[i+1:]...), false, ""
		case len(v) < 2 || v[0] != '-':
			if !permute {
				return opts, append(operands, args[i:]...), false, ""
			}
			operands = append(operands, a)
		case strings.HasPrefix(v, "--"):
			k, val, eq := strings.Cut(v, "=")
			d, ok := t.long(k)
			if !ok {
				return opts, operands, false, fmt.Sprintf("%s option %s, which zot does not know", prog, k)
			}
			o := parsedOpt{name: d.name}
			switch {
			case d.arg != 0 && eq:
				o.val, o.has = literalWord(val), true
			case d.arg == '=' && i+1 < len(args):
				i++
				o.val, o.has = args[i], true
				if !o.val.single {
					return opts, operands, false, fmt.Sprintf("%s %s value %s, which may split into several words", prog, k, o.val.raw)
				}
			case d.arg == '=':
				return opts, operands, false, fmt.Sprintf("%s %s without its value", prog, k)
			case eq && d.arg == 0:
				return opts, operands, false, fmt.Sprintf("%s %s with a value it does not take", prog, k)
			}
			o.next = i + 1
			opts = append(opts, o)
			if d.stop {
				return opts, operands, true, ""
			}
		default:
			for j := 1; j < len(v); j++ {
				d, ok := t["-"+v[j:j+1]]
				if !ok {
					return opts, operands, false, fmt.Sprintf("%s option -%s, which zot does not know", prog, v[j:j+1])
				}
				o := parsedOpt{name: d.name}
				if d.arg != 0 {
					switch {
					case j+1 < len(v):
						o.val, o.has = literalWord(v[j+1:]), true
					case d.arg == '=' && i+1 < len(args):
						i++
						o.val, o.has = args[i], true
						if !o.val.single {
							return opts, operands, false, fmt.Sprintf("%s -%s value %s, which may split into several words", prog, v[j:j+1], o.val.raw)
						}
					case d.arg == '=':
						return opts, operands, false, fmt.Sprintf("%s -%s without its value", prog, v[j:j+1])
					}
					j = len(v)
				}
				o.next = i + 1
				opts = append(opts, o)
				if d.stop {
					return opts, operands, true, ""
				}
			}
		}
	}
	return opts, operands, false, ""
}

// wrapperOptions reads a wrapper's options as getopt does; ok is false
// when nothing more is followed: an option could not be read (unfollowed,
// saying why) or one ends the program's work (--help, --version).
func (p *shellParser) wrapperOptions(prog string, args []shellWord, r cmdReach, permute bool) (opts []parsedOpt, operands []shellWord, ok bool) {
	opts, operands, stopped, why := getopt(prog, args, optTables()[prog], permute)
	if why != "" {
		p.unfollow(why, r.raw)
		return nil, nil, false
	}
	return opts, operands, !stopped
}

// optionTrouble reports why getopt failed; with no command left it is
// trouble only when the command would come from xargs input.
func (p *shellParser) optionTrouble(why string, rest []shellWord, r cmdReach) bool {
	if why != "" {
		p.unfollow(why, r.raw)
		return true
	}
	if len(rest) == 0 {
		if r.open {
			p.unfollow("a wrapper whose command comes from xargs input", r.raw)
		}
		return true
	}
	return false
}

// wrapperSpec is a wrapper that runs the command after its options and
// operands as it is.
type wrapperSpec struct {
	table    string
	operands int // words before the command (timeout's duration)
	// shellIfNone: without a command it starts a shell reading stdin.
	shellIfNone bool
	// lostDir names the options after which zot cannot tell the command's
	// directory ("*": always).
	lostDir string
}

var wrapperSpecs = map[string]wrapperSpec{
	"nohup":    {table: "--help! --version!"},
	"timeout":  {table: "-k/--kill-after= -s/--signal= --preserve-status --foreground -v/--verbose --help! --version!", operands: 1},
	"stdbuf":   {table: "-i/--input= -o/--output= -e/--error= --help! --version!"},
	"setsid":   {table: "-c/--ctty -f/--fork -w/--wait -h/--help! -V/--version!"},
	"taskset":  {table: "-a/--all-tasks -p/--pid! -c/--cpu-list -h/--help! -V/--version!", operands: 1},
	"ionice":   {table: "-c/--class= -n/--classdata= -p/--pid=! -P/--pgid=! -u/--uid=! -t/--ignore -h/--help! -V/--version!"},
	"chroot":   {table: "--groups= --userspec= --skip-chdir --help! --version!", operands: 1, shellIfNone: true, lostDir: "*"},
	"unbuffer": {table: "-p"},
	"nice":     {table: "-n/--adjustment= --help! --version!"},
	"time":     {table: "-a/--append -f/--format= -o/--output= -p/--portability -q/--quiet -v/--verbose -h/--help! -V/--version!"},
	"exec":     {table: "-a= -c -l"},
	"chrt": {operands: 1, table: "-a/--all-tasks -b/--batch -d/--deadline -f/--fifo -i/--idle -o/--other -r/--rr -R/--reset-on-fork " +
		"-T/--sched-runtime= -P/--sched-period= -D/--sched-deadline= -m/--max! -p/--pid! -v/--verbose -h/--help! -V/--version!"},
	"unshare": {table: "-m/--mount=? -u/--uts=? -i/--ipc=? -n/--net=? -p/--pid=? -U/--user=? -C/--cgroup=? -T/--time=? -f/--fork " +
		"--map-user= --map-group= -r/--map-root-user -c/--map-current-user --map-auto --map-users= --map-groups= --kill-child=? " +
		"--mount-proc=? --propagation= --setgroups= --keep-caps -R/--root= -w/--wd= -S/--setuid= -G/--setgid= --monotonic= --boottime= " +
		"-h/--help! -V/--version!", shellIfNone: true, lostDir: "--root --wd"},
	"nsenter": {table: "-a/--all -t/--target= -m/--mount=? -u/--uts=? -i/--ipc=? -n/--net=? -p/--pid=? -C/--cgroup=? -U/--user=? -T/--time=? " +
		"-S/--setuid= -G/--setgid= --preserve-credentials -r/--root=? -w/--wd=? -W/--wdns= -F/--no-fork -Z/--follow-context -h/--help! -V/--version!",
		shellIfNone: true, lostDir: "*"},
}

// optTables are the parsed tables of the wrappers and of the programs with
// custom handling, parsed on first use: a run that checks no command does
// not keep them.
var optTables = sync.OnceValue(func() map[string]optTable {
	specs := map[string]string{
		"env":     "-i/--ignore-environment -0/--null -u/--unset= -C/--chdir= -S/--split-string= --block-signal=? --default-signal=? --ignore-signal=? --list-signal-handling -v/--debug --help! --version!",
		"xargs":   "-0/--null -a/--arg-file= -d/--delimiter= -E= -e/--eof=? -I= -i/--replace=? -L= -l/--max-lines=? -n/--max-args= -o/--open-tty -P/--max-procs= -p/--interactive --process-slot-var= -r/--no-run-if-empty -s/--max-chars= --show-limits -t/--verbose -x/--exit --help! --version!",
		"sudo":    "-A/--askpass -a/--auth-type= -B/--bell -b/--background -C/--close-from= -c/--login-class= -D/--chdir= -E --preserve-env=? -e/--edit! -g/--group= -H/--set-home -h=? --help! --host= -i/--login -K/--remove-timestamp! -k/--reset-timestamp -l/--list! -N/--no-update -n/--non-interactive -P/--preserve-groups -p/--prompt= -R/--chroot= -r/--role= -S/--stdin -s/--shell -T/--command-timeout= -t/--type= -U/--other-user= -u/--user= -V/--version! -v/--validate!",
		"doas":    "-C=! -L! -n -s -u=",
		"su":      "-m/-p/--preserve-environment -w/--whitelist-environment= -g/--group= -G/--supp-group= -l/--login -c/--command= --session-command= -f/--fast -s/--shell= -P/--pty -h/--help! -V/--version!",
		"runuser": "-u/--user= -m/-p/--preserve-environment -w/--whitelist-environment= -g/--group= -G/--supp-group= -l/--login -c/--command= --session-command= -f/--fast -s/--shell= -P/--pty -h/--help! -V/--version!",
		"script":  "-I/--log-in= -O/--log-out= -B/--log-io= -T/--log-timing= -t/--timing=? -m/--logging-format= -a/--append -c/--command= -e/--return -f/--flush --force -E/--echo= -o/--output-limit= -q/--quiet -h/--help! -V/--version!",
		"flock":   "-s/--shared -x/-e/--exclusive -u/--unlock -n/--nb/--nonblock -w/--wait/--timeout= -E/--conflict-exit-code= -o/--close -c/--command= -F/--no-fork --verbose -h/--help! -V/--version!",
		"watch":   "-b/--beep -c/--color -C/--no-color -d/--differences=? -e/--errexit -g/--chgexit -q/--equexit= -n/--interval= -p/--precise -r/--no-rerun -t/--no-title -w/--no-wrap/--no-linewrap -x/--exec -h/--help! -v/--version!",
		"command": "-p -v! -V!",
		"builtin": "",
		"read":    "-a= -d= -e -E -i= -n= -N= -p= -r -s -t= -u=",
		"mapfile": "-d= -n= -O= -s= -t -u= -C= -c=",
	}
	for name, w := range wrapperSpecs {
		specs[name] = w.table
	}
	t := map[string]optTable{}
	for name, s := range specs {
		t[name] = parseOptTable(s)
	}
	return t
})

// unwrappedLaunchers run a command given in their arguments by a grammar
// zot does not model, or are shells it does not read; the line asks
// rather than guess what they run.
var unwrappedLaunchers = map[string]bool{
	"systemd-run": true, "strace": true, "ltrace": true, "valgrind": true, "gdb": true, "parallel": true,
	"fakeroot": true, "faketime": true, "proxychains": true, "proxychains4": true, "torsocks": true,
	"firejail": true, "bwrap": true, "pkexec": true, "xvfb-run": true, "dbus-run-session": true,
	"catchsegv": true, "numactl": true, "cpulimit": true, "trickle": true, "chpst": true, "setpriv": true,
	"prlimit": true, "capsh": true, "run-parts": true, "newgrp": true, "login": true, "machinectl": true,
	"tmux": true, "screen": true,
	"zsh": true, "ksh": true, "mksh": true, "fish": true, "tcsh": true, "csh": true, "yash": true, "posh": true, "pwsh": true,
}

// runWrapper unwraps a wrapper of wrapperSpecs.
func (p *shellParser) runWrapper(name string, args []shellWord, r cmdReach) {
	spec := wrapperSpecs[name]
	opts, rest, stopped, why := getopt(name, args, optTables()[name], false)
	if why != "" {
		p.unfollow(why, r.raw)
		return
	}
	if stopped {
		return
	}
	inner := r.through(name)
	for _, o := range opts {
		if hasWord(spec.lostDir, o.name) {
			inner.dir, inner.dirWhy = "", name+" "+o.name+" changes it"
		}
	}
	if spec.lostDir == "*" {
		inner.dir, inner.dirWhy = "", name+" changes it"
	}
	operands := spec.operands
	if name == "chrt" && len(rest) > 0 && !isDigits(rest[0].val) {
		operands = 0 // the priority may be left out for the policies that have none
	}
	if len(rest) < operands {
		rest = nil
	} else {
		if !allSingle(rest[:operands]) {
			p.unfollow(name+" operand that may split into several words", r.raw)
			return
		}
		rest = rest[operands:]
	}
	if len(rest) == 0 {
		switch {
		case r.open:
			p.unfollow(name+" whose command comes from xargs input", r.raw)
		case spec.shellIfNone:
			p.unfollow(name+" without a command, which starts a shell reading stdin", r.raw)
		}
		return
	}
	inner.open = r.open
	p.run(rest, inner)
}

// allSingle reports whether none of ws can split into several words, which
// would shift a wrapper's grammar (find . -name $x, x='a -exec rm {} ;').
func allSingle(ws []shellWord) bool {
	for _, w := range ws {
		if !w.single {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isOldNice reports nice's old form of the adjustment: -10, --5, -+5.
func isOldNice(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	if s[0] == '-' || s[0] == '+' {
		s = s[1:]
	}
	return isDigits(s)
}

// hasWord reports whether w is one of the space-separated words of list.
func hasWord(list, w string) bool {
	for list != "" {
		var f string
		f, list, _ = strings.Cut(list, " ")
		if f == w {
			return true
		}
	}
	return false
}

// script splits a command string a wrapper runs with a shell (bash -c,
// su -c, watch), in that wrapper's directory and environment.
func (p *shellParser) script(src string, bash bool, r cmdReach) {
	k := p.child(src, bash)
	if k == nil {
		return
	}
	k.via, k.env, k.vars = r.via, r.env, p.vars.shell()
	k.dir = shellDir{path: r.dir, why: r.dirWhy}
	// The new shell's cd .. is taken from $PWD when $PWD names where it
	// starts, else from the directory's real path: behind a wrapper (env
	// -C or -u PWD, sudo) or with PWD assigned, zot cannot tell which,
	// and it matters where a link leads there.
	if _, pwd := r.env["PWD"]; r.dir != "" && (pwd || r.level > 1) {
		if real, err := filepath.EvalSymlinks(r.dir); err != nil || real != r.dir {
			k.dir = shellDir{why: "a shell started through a wrapper in a directory reached through a link, whose $PWD may not be the line's"}
		}
	}
	k.depth += r.level
	k.list(false, false)
}

// scriptBySHELL splits a string a wrapper runs with $SHELL -c (flock -c,
// script -c), when $SHELL is a shell zot reads.
func (p *shellParser) scriptBySHELL(w shellWord, r cmdReach, via string) {
	shell := filepath.Base(p.out.sc.Getenv("SHELL"))
	switch {
	case !hasWord("bash sh dash ash .", shell):
		p.unfollow(via+" runs its command with $SHELL ("+shell+"), whose grammar zot does not read", r.raw)
	case !w.literal:
		p.unfollow("a "+via+" command known only at run time", r.raw)
	default:
		p.script(w.val, shell == "bash", r.through(via))
	}
}

// Shells.

var safeSetOptions = "allexport braceexpand emacs errexit errtrace functrace hashall ignoreeof " +
	"interactive-comments monitor noclobber noexec noglob nolog notify nounset onecmd pipefail privileged verbose vi xtrace"

// safeSetLetters are the set options that change nothing about what a
// line runs or where.
const safeSetLetters = "abefhmnprtuvxBCET"

var safeShoptOptions = "nullglob failglob globstar dotglob nocaseglob nocasematch inherit_errexit xpg_echo " +
	"globasciiranges extquote checkwinsize histappend cmdhist lithist"

// runShell follows sh, dash, ash or bash: the string of -c is split as a
// script of its own; a shell reading stdin, or a startup file, runs what
// zot cannot see.
func (p *shellParser) runShell(name string, args []shellWord, r cmdReach) {
	bash := name == "bash"
	cmdMode, stdin := false, false
	i := 0
options:
	for ; i < len(args); i++ {
		a := args[i]
		if !a.literal {
			if startsAsOperand(a) {
				break
			}
			p.unfollow(name+" argument "+a.raw+" known only at run time", r.raw)
			return
		}
		v := a.val
		switch {
		case v == "--" || v == "-":
			i++
			break options
		case len(v) < 2 || (v[0] != '-' && v[0] != '+'):
			break options
		case strings.HasPrefix(v, "--") && bash:
			switch v {
			case "--norc", "--noprofile", "--noediting", "--restricted", "--verbose":
			case "--help", "--version", "--dump-strings", "--dump-po-strings":
				return
			default:
				p.unfollow(name+" "+v+", which zot does not follow", r.raw)
				return
			}
			continue
		}
		for _, ch := range v[1:] {
			switch {
			case ch == 'c':
				cmdMode = true
			case ch == 's':
				stdin = true
			case ch == 'o' || ch == 'O':
				i++
				if i >= len(args) {
					return // prints the options
				}
				list := safeSetOptions
				if ch == 'O' {
					list = safeShoptOptions
				}
				if v[0] == '-' && (!args[i].literal || !hasWord(list, args[i].val)) {
					p.unfollow(fmt.Sprintf("%s -%c %s, which changes how the shell reads commands", name, ch, args[i].raw), r.raw)
					return
				}
			case ch == 'i' || ch == 'l':
				p.unfollow(fmt.Sprintf("%s -%c, which runs startup files", name, ch), r.raw)
				return
			case !strings.ContainsRune(safeSetLetters, ch) && ch != 'D':
				p.unfollow(fmt.Sprintf("%s option %c%c, which zot does not follow", name, v[0], ch), r.raw)
				return
			}
		}
	}
	rest := args[i:]
	switch {
	case cmdMode && len(rest) > 0:
		if !rest[0].literal {
			p.unfollow("a "+name+" -c script known only at run time", r.raw)
			return
		}
		p.script(rest[0].val, bash, r.through(name+" -c"))
	case cmdMode:
		if r.open {
			p.unfollow(name+" -c whose script comes from xargs input", r.raw)
		}
	case stdin || len(rest) == 0:
		p.unfollow(name+" reading its commands from stdin", r.raw)
	case !rest[0].literal || isStdinPath(rest[0].val):
		p.unfollow(name+" running a script zot cannot read ("+rest[0].raw+")", r.raw)
	}
	// Otherwise it runs a script file, which zot does not read (docs).
}

// isStdinPath reports a path that names a file descriptor or stdin: the
// script is whatever is fed to it.
func isStdinPath(s string) bool {
	return s == "-" || strings.HasPrefix(s, "/dev/") || strings.HasPrefix(s, "/proc/") || strings.HasPrefix(s, "<(")
}

// interpreterPrograms are programs that run a program of their own; the
// options listed give it on the command line.
var interpreterPrograms = map[string]string{
	"python": "c m", "pypy": "c m", "perl": "e E", "ruby": "e", "irb": "", "node": "e p eval print", "nodejs": "e p eval print",
	"bun": "e eval p print", "php": "r", "lua": "e", "luajit": "e", "tclsh": "", "wish": "", "expect": "c",
	"Rscript": "e", "R": "e", "julia": "e", "osascript": "e", "psql": "c f command file", "mysql": "e execute",
	"sqlite3": "", "ed": "", "ex": "",
}

// interpreter asks about an interpreter that reads its program from stdin
// (python3 <<EOF, … | perl): zot cannot see that program.
func (p *shellParser) interpreter(name string, args []shellWord, r cmdReach) {
	base := strings.TrimRight(name, "0123456789.")
	progOpts, ok := interpreterPrograms[base]
	if !ok {
		return
	}
	vals := make([]string, len(args))
	for i, a := range args {
		vals[i] = a.val
	}
	flags, positional := commandFlags(name, vals)
	for f := range flags {
		if hasWord(progOpts, f) {
			return
		}
	}
	stdin := len(positional) == 0 || base == "ed" || base == "ex" || (base == "sqlite3" && len(positional) < 2) || r.open
	if !stdin {
		for _, a := range args {
			if a.val == positional[0] {
				stdin = !a.literal || isStdinPath(a.val)
				break
			}
		}
	}
	if stdin {
		p.unfollow(name+" reading its program from stdin", r.raw)
	}
}

// find: the expression is read by find's own grammar, so that only real
// -exec, -execdir, -ok and -okdir actions count, and an argument such as
// -name -exec stays a name.

var findArity = func() map[string]int {
	m := map[string]int{}
	for _, p := range strings.Fields("( ) ! , -not -a -and -o -or -daystart -depth -d -follow -ignore_readdir_race -mount " +
		"-noignore_readdir_race -noleaf -xdev -warn -nowarn -empty -executable -false -true -nogroup -nouser -readable " +
		"-writable -delete -ls -print -print0 -prune -quit -help --help -version --version") {
		m[p] = 0
	}
	for _, p := range strings.Fields("-amin -anewer -atime -cmin -cnewer -ctime -context -fls -fprint -fprint0 -fstype -gid " +
		"-group -ilname -iname -inum -ipath -iregex -iwholename -links -lname -maxdepth -mindepth -mmin -mtime -name -newer " +
		"-path -perm -printf -regex -regextype -samefile -size -type -uid -used -user -wholename -xtype -files0-from") {
		m[p] = 1
	}
	m["-fprintf"] = 2
	return m
}()

func (p *shellParser) runFind(args []shellWord, r cmdReach) {
	i := 0
	for i < len(args) && args[i].literal {
		v := args[i].val
		if v == "-H" || v == "-L" || v == "-P" || strings.HasPrefix(v, "-O") {
			i++
		} else if v == "-D" {
			i += 2
		} else {
			break
		}
	}
	// Start points run to the first word that starts an expression.
	for ; i < len(args); i++ {
		w := args[i]
		if !w.literal {
			p.unfollow("a find start point known only at run time ("+w.raw+")", r.raw)
			return
		}
		if strings.HasPrefix(w.val, "-") || w.val == "(" || w.val == "!" {
			break
		}
	}
	if r.open {
		p.unfollow("find whose expression comes from xargs input", r.raw)
		return
	}
	for i < len(args) {
		w := args[i]
		if !w.literal {
			p.unfollow("a find expression word known only at run time ("+w.raw+")", r.raw)
			return
		}
		switch v := w.val; v {
		case "-exec", "-execdir", "-ok", "-okdir":
			j, plus := i+1, false
			for ; j < len(args); j++ {
				if !args[j].literal {
					p.unfollow("a find "+v+" word known only at run time ("+args[j].raw+")", r.raw)
					return
				}
				if args[j].val == ";" || args[j].val == "+" && j > i+1 && args[j-1].val == "{}" {
					plus = args[j].val == "+"
					break
				}
			}
			if j >= len(args) || j == i+1 {
				return // find refuses an -exec without its end
			}
			inner := r.through("find " + v)
			if strings.HasSuffix(v, "dir") {
				inner.dir, inner.dirWhy = "", "find "+v+" runs it in each file's directory"
			}
			inner.open = plus
			cmd := make([]shellWord, j-i-1)
			for k, a := range args[i+1 : j] {
				cmd[k] = a.filledAt("{}") // find puts a file name there
			}
			p.run(cmd, inner)
			i = j + 1
		default:
			n, ok := findArity[v]
			if !ok && len(v) == 8 && strings.HasPrefix(v, "-newer") {
				n, ok = 1, true // -newerXY
			}
			if !ok {
				p.unfollow("find "+v+", which zot does not know", r.raw)
				return
			}
			if !allSingle(args[i+1 : min(i+1+n, len(args))]) {
				p.unfollow("a find "+v+" argument that may split into several words", r.raw)
				return
			}
			i += 1 + n
		}
	}
}

// runXargs: the command after xargs's options gets the words read from its
// input appended (or, with -I R, put where R is).
func (p *shellParser) runXargs(args []shellWord, r cmdReach) {
	opts, rest, ok := p.wrapperOptions("xargs", args, r, false)
	if !ok {
		return
	}
	replace := ""
	for _, o := range opts {
		switch {
		case o.has && !o.val.literal && (o.name == "-I" || o.name == "--replace"):
			p.unfollow("xargs -I with a string known only at run time", r.raw)
			return
		case o.name == "-I":
			replace = o.val.val
		case o.name == "--replace":
			replace = "{}"
			if o.has {
				replace = o.val.val
			}
		}
	}
	if len(rest) == 0 {
		rest = []shellWord{literalWord("echo")}
	}
	inner := r.through("xargs")
	inner.open = replace == ""
	if replace != "" {
		cmd := make([]shellWord, len(rest))
		for i, a := range rest {
			cmd[i] = a.filledAt(replace) // xargs puts its input there
		}
		rest = cmd
	}
	p.run(rest, inner)
}

// runEnv: options (-S splits its string into more of them), NAME=value
// words, then the command.
func (p *shellParser) runEnv(args []shellWord, r cmdReach) {
	inner := r.through("env")
	env := map[string]string{}
	for k, v := range r.env {
		env[k] = v
	}
	var rest []shellWord
	for {
		opts, operands, ok := p.wrapperOptions("env", args, r, false)
		if !ok {
			return
		}
		rest = operands
		split := false
		for _, o := range opts {
			switch o.name {
			case "--ignore-environment":
				env = map[string]string{}
			case "--unset":
				delete(env, o.val.val)
			case "--chdir":
				inner.dir, inner.dirWhy = p.joinDir(inner, o.val, "env -C")
			case "--split-string":
				words, ok := envSplit(o.val)
				if !ok {
					p.unfollow("env -S with quotes, escapes, ${…} or # in its string", r.raw)
					return
				}
				args, split = append(words, args[o.next:]...), true
			}
			if split {
				break // GNU env reads its options again from the split words
			}
		}
		if !split {
			break
		}
	}
	if len(rest) > 0 && rest[0].literal && rest[0].val == "-" {
		env, rest = map[string]string{}, rest[1:]
	}
	rest, ok := p.envAssignments("env", rest, env, r)
	if !ok {
		return
	}
	if len(rest) == 0 {
		if r.open {
			p.unfollow("env whose command comes from xargs input", r.raw)
		}
		return
	}
	inner.env, inner.open = env, r.open
	p.run(rest, inner)
}

// envAssignments reads the NAME=value words before a wrapper's command
// (env, sudo) into env: any word with an = is one, as the wrappers take it
// ("=x" too).
func (p *shellParser) envAssignments(prog string, rest []shellWord, env map[string]string, r cmdReach) ([]shellWord, bool) {
	for len(rest) > 0 {
		w := rest[0]
		name, val, isAssign := strings.Cut(w.val, "=")
		if _, n := assignmentName(w.raw); n == 0 && !w.literal || !w.single {
			p.unfollow(prog+" argument "+w.raw+" known only at run time", r.raw)
			return nil, false
		}
		if !isAssign {
			break
		}
		p.assign(name, isIntegerWord(shellWord{raw: val, val: val, literal: w.literal}), r.raw)
		env[name], rest = val, rest[1:]
	}
	return rest, true
}

// envSplit splits env -S's string the way GNU env does, for strings
// without quotes, escapes, ${…} or comments; ok is false for those.
func envSplit(w shellWord) ([]shellWord, bool) {
	if !w.literal || strings.ContainsAny(w.val, "\\'\"$#") {
		return nil, false
	}
	var words []shellWord
	for _, f := range strings.Fields(w.val) {
		words = append(words, literalWord(f))
	}
	return words, true
}

// runSudo: sudo's options, VAR=value words, then the command; -s and -i
// hand the command to a shell.
func (p *shellParser) runSudo(args []shellWord, r cmdReach) {
	opts, rest, ok := p.wrapperOptions("sudo", args, r, false)
	if !ok {
		return
	}
	inner := r.through("sudo")
	shell := ""
	for _, o := range opts {
		switch o.name {
		case "-h":
			if !o.has {
				return // help
			}
		case "--chdir":
			inner.dir, inner.dirWhy = p.joinDir(inner, o.val, "sudo -D")
		case "--chroot":
			inner.dir, inner.dirWhy = "", "sudo -R changes the root"
		case "--shell", "--login":
			shell = o.name
			if shell == "--login" {
				inner.dir, inner.dirWhy = "", "sudo -i starts in the user's home directory"
			}
		}
	}
	env := map[string]string{}
	for k, v := range r.env {
		env[k] = v
	}
	rest, ok = p.envAssignments("sudo", rest, env, r)
	if !ok {
		return
	}
	inner.env = env
	switch {
	case len(rest) == 0 && shell != "":
		p.unfollow("sudo "+shell+" without a command, which starts a shell reading stdin", r.raw)
		return
	case len(rest) == 0:
		if r.open {
			p.unfollow("sudo whose command comes from xargs input", r.raw)
		}
		return
	case shell == "--login":
		p.unfollow("sudo -i, which runs the command with the user's login shell", r.raw)
	case shell != "":
		for _, w := range rest {
			if strings.Contains(w.val, "$") {
				p.unfollow("sudo -s with a $ the user's shell expands", r.raw)
				break
			}
		}
	}
	inner.open = r.open
	p.run(rest, inner)
}

func (p *shellParser) runDoas(args []shellWord, r cmdReach) {
	opts, rest, stopped, why := getopt("doas", args, optTables()["doas"], false)
	for _, o := range opts {
		if o.name == "-s" {
			p.unfollow("doas -s, which starts a shell reading stdin", r.raw)
			return
		}
	}
	if p.optionTrouble(why, rest, r) || stopped {
		return
	}
	inner := r.through("doas")
	inner.open = r.open
	p.run(rest, inner)
}

// runSu follows su and runuser: -c hands a string to the user's shell,
// runuser -u runs a command as it is.
func (p *shellParser) runSu(name string, args []shellWord, r cmdReach) {
	opts, operands, stopped, why := getopt(name, args, optTables()[name], true)
	if why != "" {
		p.unfollow(why, r.raw)
		return
	}
	if stopped {
		return
	}
	inner := r.through(name)
	var command, shellPath *shellWord
	user, login := false, false
	for _, o := range opts {
		switch o.name {
		case "--command", "--session-command":
			command = &o.val
		case "--shell":
			shellPath = &o.val
		case "--login":
			login = true
		case "--user":
			user = true
		}
	}
	if len(operands) > 0 && operands[0].literal && operands[0].val == "-" {
		login, operands = true, operands[1:]
	}
	if login {
		inner.dir, inner.dirWhy = "", name+" -l starts in the user's home directory"
	}
	switch {
	case command != nil && shellPath != nil && shellPath.literal && hasWord("bash sh dash ash", filepath.Base(shellPath.val)):
		if !command.literal {
			p.unfollow("a "+name+" -c command known only at run time", r.raw)
			return
		}
		p.script(command.val, filepath.Base(shellPath.val) == "bash", inner)
	case command != nil:
		p.unfollow(name+" -c, which runs the command with the user's login shell", r.raw)
	case user && len(operands) > 0:
		inner.open = r.open
		p.run(operands, inner)
	case len(operands) > 1:
		p.unfollow(name+", which passes these words to the user's shell", r.raw)
	default:
		p.unfollow(name+" without -c, which starts a shell reading stdin", r.raw)
	}
}

// runSg: sg [-] group [-c] command… runs the words, joined, with /bin/sh -c.
func (p *shellParser) runSg(args []shellWord, r cmdReach) {
	if len(args) > 0 && args[0].literal && args[0].val == "-" {
		args = args[1:]
	}
	if len(args) > 1 && args[1].literal && args[1].val == "-c" {
		args = append(args[:1:1], args[2:]...)
	}
	if len(args) < 2 {
		p.unfollow("sg without a command, which starts a shell reading stdin", r.raw)
		return
	}
	p.joinedScript("sg", args[1:], r)
}

// joinedScript splits the words a wrapper joins with spaces and runs with
// /bin/sh -c (watch, sg).
func (p *shellParser) joinedScript(name string, words []shellWord, r cmdReach) {
	vals := make([]string, len(words))
	for i, w := range words {
		if !w.literal {
			p.unfollow("a "+name+" command word known only at run time ("+w.raw+")", r.raw)
			return
		}
		vals[i] = w.val
	}
	p.script(strings.Join(vals, " "), false, r.through(name))
}

func (p *shellParser) runScript(args []shellWord, r cmdReach) {
	opts, _, ok := p.wrapperOptions("script", args, r, true)
	if !ok {
		return
	}
	for _, o := range opts {
		if o.name == "--command" {
			p.scriptBySHELL(o.val, r, "script -c")
			return
		}
	}
	p.unfollow("script without -c, which starts a shell reading stdin", r.raw)
}

// runFlock: flock [options] file command…, or file -c string, or fd.
func (p *shellParser) runFlock(args []shellWord, r cmdReach) {
	opts, rest, ok := p.wrapperOptions("flock", args, r, false)
	if !ok {
		return
	}
	for _, o := range opts {
		if o.name == "--command" {
			p.scriptBySHELL(o.val, r, "flock -c")
			return
		}
	}
	if len(rest) < 2 {
		if r.open {
			p.unfollow("flock whose command comes from xargs input", r.raw)
		}
		return
	}
	if !rest[0].single {
		p.unfollow("a flock file that may split into several words", r.raw)
		return
	}
	if c := rest[1]; c.literal && (c.val == "-c" || c.val == "--command") {
		if len(rest) == 3 {
			p.scriptBySHELL(rest[2], r, "flock -c")
		}
		return
	}
	inner := r.through("flock")
	inner.open = r.open
	p.run(rest[1:], inner)
}

// runWatch: watch joins its command's words with spaces and runs them with
// sh -c, unless -x makes it exec them as they are.
func (p *shellParser) runWatch(args []shellWord, r cmdReach) {
	opts, rest, stopped, why := getopt("watch", args, optTables()["watch"], false)
	if p.optionTrouble(why, rest, r) || stopped {
		return
	}
	for _, o := range opts {
		if o.name == "--exec" {
			p.run(rest, r.through("watch -x"))
			return
		}
	}
	p.joinedScript("watch", rest, r)
}

// Builtins.

func (p *shellParser) trap(args []shellWord, r cmdReach) {
	if len(args) > 0 && args[0].literal && args[0].val == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return
	}
	if a := args[0]; a.literal && (a.val == "-l" || a.val == "-p" || a.val == "-" || a.val == "") {
		return
	}
	p.unfollow("trap, whose command runs later", r.raw)
}

// builtinOptions asks about the options of enable (loads or hides
// builtins), hash -p (binds a name to a file), compgen/complete -C and -F
// and bind -x (run commands).
func (p *shellParser) builtinOptions(name string, args []shellWord, r cmdReach) {
	risky := map[string]string{"hash": "p", "compgen": "CF", "complete": "CF", "bind": "x"}[name]
	for _, a := range args {
		switch {
		case !a.literal:
			p.unfollow(name+" with an argument known only at run time", r.raw)
			return
		case name == "enable" && !hasWord("-a -p -s", a.val):
			p.unfollow("enable, which loads or hides builtins", r.raw)
			return
		case risky != "" && strings.HasPrefix(a.val, "-") && strings.ContainsAny(a.val[1:], risky):
			p.unfollow(name+" "+a.val+", which makes a name run other code", r.raw)
			return
		}
	}
}

// setOptions checks set's options: those that change how bash reads or
// runs commands (-k, -P, -o posix) are not followed.
func (p *shellParser) setOptions(args []shellWord, r cmdReach) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.literal {
			p.unfollow("set with an argument known only at run time", r.raw)
			return
		}
		v := a.val
		if v == "--" || len(v) < 2 || (v[0] != '-' && v[0] != '+') {
			return // positional parameters follow
		}
		for _, ch := range v[1:] {
			switch {
			case ch == 'o':
				i++
				if i < len(args) && v[0] == '-' && (!args[i].literal || !hasWord(safeSetOptions, args[i].val)) {
					p.unfollow("set -o "+args[i].raw+", which changes how bash reads commands", r.raw)
					return
				}
			case v[0] == '-' && !strings.ContainsRune(safeSetLetters, ch):
				p.unfollow(fmt.Sprintf("set -%c, which changes how bash reads commands", ch), r.raw)
				return
			}
		}
	}
}

// shoptOptions checks the shell options shopt -s turns on.
func (p *shellParser) shoptOptions(args []shellWord, r cmdReach) {
	on, setNames := false, false
	for _, a := range args {
		switch {
		case !a.literal:
			p.unfollow("shopt with an argument known only at run time", r.raw)
			return
		case strings.HasPrefix(a.val, "-"):
			on = on || strings.Contains(a.val, "s")
			setNames = setNames || strings.Contains(a.val, "o")
		case on && !hasWord(safeShoptOptions, a.val) && !(setNames && hasWord(safeSetOptions, a.val)):
			p.unfollow("shopt -s "+a.val+", which changes how bash reads commands", r.raw)
			return
		}
	}
}

// assigningBuiltin checks builtins that assign to variables they are given
// the names of: bash evaluates a subscript in such a name as arithmetic,
// so a name known only at run time could run commands.
func (p *shellParser) assigningBuiltin(name string, args []shellWord, r cmdReach) {
	where := r.raw
	var names []shellWord
	switch name {
	case "read", "mapfile", "readarray":
		table := optTables()["read"]
		if name != "read" {
			table = optTables()["mapfile"]
		}
		opts, rest, _, why := getopt(name, args, table, false)
		if why != "" {
			p.unfollow(why, where)
			return
		}
		for _, o := range opts {
			switch o.name {
			case "-a":
				names = append(names, o.val)
			case "-C":
				p.unfollow(name+" -C, which runs a callback", where)
			}
		}
		names = append(names, rest...)
	case "printf":
		switch {
		case len(args) > 1 && args[0].literal && args[0].val == "-v":
			names = append(names, args[1])
		case len(args) > 0 && args[0].literal && strings.HasPrefix(args[0].val, "-v") && len(args[0].val) > 2:
			names = append(names, literalWord(args[0].val[2:]))
		case len(args) > 1 && !args[0].literal:
			// A format known only at run time could be -v: then the next
			// word is a name.
			if !args[1].literal || strings.Contains(args[1].val, "[") {
				p.unfollow("printf with a format known only at run time before a word that could be a -v name", where)
			}
		}
	case "getopts":
		if len(args) > 0 && !args[0].literal {
			names = append(names, args[1:min(3, len(args))]...) // it may be --
			break
		}
		if len(args) > 0 && args[0].val == "--" {
			args = args[1:]
		}
		if len(args) > 1 {
			names = append(names, args[1])
		}
	case "wait":
		// wait -p NAME (also -np NAME, -pNAME) stores a process id in it;
		// a word known only at run time may be that -p, and the next the
		// name.
		for i, a := range args {
			switch {
			case !a.literal && i+1 < len(args) && args[i+1].literal:
				names = append(names, args[i+1])
			case !a.literal && i+1 < len(args):
				if r.shell && !r.subshell {
					p.forgetAll(where)
				}
			case !a.literal || !strings.HasPrefix(a.val, "-") || a.val == "--":
			case strings.HasSuffix(a.val, "p") && i+1 < len(args):
				names = append(names, args[i+1])
			case strings.Contains(a.val, "p"):
				names = append(names, literalWord(a.val[strings.IndexByte(a.val, 'p')+1:]))
			}
		}
	default: // declare, typeset, local, export, readonly
		// bash expands every argument before it assigns any: in export
		// F=ok G=$F, G gets the F of before. It brace-expands them too,
		// and behind command or builtin the words zot has were split,
		// where bash kept each assignment one word.
		values := make([]varValue, len(args))
		for i, a := range args {
			if _, k := assignmentName(a.raw); k > 0 {
				values[i] = p.assignedValue(a)
				if a.glob || r.level > 0 {
					values[i] = varValue{state: varUnknown}
				}
			}
		}
		options := false
		for i, a := range args {
			if n, k := assignmentName(a.raw); k > 0 {
				p.assignWord(n, a, where)
				switch {
				case !r.shell || r.subshell:
				case name == "export" && !options && a.raw[k-2] != '+' && a.raw[k-2] != ']':
					p.setVar(n, values[i], p.certain(r.redirected), where)
				case name == "export":
					p.forgetVar(n, where)
				default:
					p.freezeVar(n, where) // its attributes change what later assignments store
				}
				continue
			}
			if !a.literal {
				p.unfollow(name+" of a name known only at run time ("+a.raw+")", where)
				continue
			}
			if strings.HasPrefix(a.val, "-") || strings.HasPrefix(a.val, "+") {
				options = true
				if hasWord("declare typeset local", name) && strings.HasPrefix(a.val, "-") && strings.ContainsAny(a.val[1:], "in") {
					p.unfollow(name+" "+a.val+", whose integer or reference attribute bash evaluates later", where)
				}
				continue
			}
			if v, ok := p.checkVarName(a, name, where); ok && r.shell && !r.subshell && (name != "export" || options) {
				p.freezeVar(v, where)
			}
		}
		return
	}
	if len(names) == 0 && r.shell && !r.subshell {
		switch name {
		case "read":
			p.forgetVar("REPLY", where)
		case "mapfile", "readarray":
			p.forgetVar("MAPFILE", where)
		}
	}
	if name == "getopts" {
		p.forgetVar("OPTARG", where)
		p.forgetVar("OPTIND", where)
	}
	for _, n := range names {
		if v, ok := p.checkVarName(n, name, where); ok {
			p.assign(v, false, where)
			if r.shell && !r.subshell {
				p.forgetVar(v, where)
			}
		}
	}
}
