package main

import (
	"os"
	"path/filepath"
	"strings"
)

// Where each command of a line runs, as far as the splitter can tell: the
// shell's directory through cd, pushd, popd and dirs, and the directory a
// wrapper gives its command (env -C, sudo -D). What a cd in a subshell, a
// background list or a here-document changes is scoped by the parser
// (validate_shell.go); what may fail or may not run leaves the directory
// unknown, which asks.

// shellDir is the shell's working directory as far as the splitter can
// tell: path, or "" and why not.
type shellDir struct {
	path, why string
	// mayFail, after a cd that may not run or may fail, says why: what
	// follows in its && chain runs where it went, anything else may not.
	mayFail string
	// stack holds the entries known to be on top of pushd's stack;
	// stackLost says what lies below them is not known (a pushd, popd or
	// dirs -c that may or may not have run), and stackMayFail that the
	// last change holds only through its && chain, as mayFail.
	stack                   []string
	stackLost, stackMayFail bool
}

// lose forgets where the shell is, for why; pushd's stack stays.
func (d *shellDir) lose(why string) { d.path, d.why, d.mayFail = "", why, "" }

// loseStack forgets pushd's stack.
func (d *shellDir) loseStack() { d.stack, d.stackLost, d.stackMayFail = nil, true, false }

func (d shellDir) clone() shellDir {
	d.stack = append([]string(nil), d.stack...)
	return d
}

// changeDir follows cd, pushd, popd and dirs -c in the shell's directory.
func (p *shellParser) changeDir(name string, args []shellWord, r cmdReach) {
	if !r.shell || r.subshell {
		return // behind a wrapper, in a pipeline stage or a background job: it moves nothing after it
	}
	if !p.bash && name != "cd" {
		return // dash has no pushd, popd or dirs: a program of the name cannot move the shell
	}
	if p.loops > 0 && name != "dirs" {
		p.unfollow(name+" inside a loop, which moves the commands before it on the next pass", r.raw)
	}
	d := &p.dir
	// A change to the stack that may not happen leaves it unknown; one
	// that may fail holds through its && chain.
	runs := p.compound == 0 && p.andOr != andOrAfterOr && !r.redirected
	changeStack := func(change func()) {
		if !runs {
			d.loseStack()
			return
		}
		change()
		d.stackMayFail = d.stackMayFail || p.andOr == andOrAfterAnd || d.mayFail != ""
	}
	defer func() {
		if r.redirected && d.path != "" && d.mayFail == "" {
			d.mayFail = name + " with a redirection, which may fail"
		}
	}()
	switch name {
	case "dirs":
		for _, a := range args {
			if !a.literal || a.val == "-c" {
				changeStack(func() { d.stack, d.stackLost = nil, false })
			}
		}
		return
	case "popd":
		switch {
		case len(args) > 0:
			d.lose("popd " + args[0].raw)
			d.loseStack()
		case len(d.stack) > 0:
			top := d.stack[len(d.stack)-1]
			p.moveTo(top, false, name)
			changeStack(func() { d.stack = d.stack[:len(d.stack)-1] })
		case d.stackLost:
			d.lose("popd with a stack zot cannot tell")
		}
		return
	}
	if name == "pushd" {
		for _, a := range args {
			if !a.literal || strings.HasPrefix(a.val, "-") || strings.HasPrefix(a.val, "+") {
				d.lose("pushd " + a.raw) // -n, --, +N, -N
				d.loseStack()
				return
			}
		}
	}
	physical := false
	i := 0
	for ; name == "cd" && i < len(args) && args[i].literal; i++ {
		v := args[i].val
		if v == "--" {
			i++
			break
		}
		if len(v) < 2 || v[0] != '-' {
			break
		}
		for _, ch := range v[1:] {
			switch {
			case ch == 'P':
				physical = true
			case ch == 'L':
				physical = false
			case ch == 'e' && p.bash:
			default:
				return // cd refuses the option and stays (-@ is Solaris's)
			}
		}
	}
	rest := args[i:]
	var target string
	switch {
	case len(rest) > 1:
		for _, w := range rest {
			if !w.literal {
				d.lose(name + " with a word that may expand to no word or to several (" + w.raw + ")")
				return
			}
		}
		if !p.bash {
			d.lose(name + " with more than one argument, which dash reads its own way")
			return
		}
		return // too many arguments: bash's cd fails and stays
	case len(rest) == 0 && name == "pushd":
		if len(d.stack) == 0 {
			if d.stackLost {
				d.lose("pushd with a stack zot cannot tell")
			}
			return
		}
		top, old := d.stack[len(d.stack)-1], d.path
		p.moveTo(top, false, name)
		changeStack(func() { d.stack[len(d.stack)-1] = old })
		return
	case len(rest) == 0:
		target = p.out.sc.Getenv("HOME")
		if target == "" {
			d.lose(name + " with no HOME")
			return
		}
	default:
		t := rest[0]
		switch {
		case t.raw == "~" || tildePath(t):
			home := p.out.sc.Getenv("HOME")
			if home == "" {
				d.lose(name + " ~ with no HOME")
				return
			}
			target = home + strings.TrimPrefix(t.raw, "~")
		case !t.literal:
			d.lose(name + " to a directory known only at run time (" + t.raw + ")")
			return
		case t.val == "-" || t.val == "":
			d.lose(name + " " + t.raw)
			return
		default:
			target = t.val
			if p.out.sc.Getenv("CDPATH") != "" && !filepath.IsAbs(target) && !strings.HasPrefix(target, "./") && !strings.HasPrefix(target, "../") && target != "." && target != ".." {
				d.lose(name + " with $CDPATH set")
				return
			}
		}
	}
	old := d.path
	p.moveTo(target, physical, name)
	if name == "pushd" {
		changeStack(func() { d.stack = append(d.stack, old) })
	}
}

// moveTo changes the shell's directory to target, as far as zot can tell.
func (p *shellParser) moveTo(target string, physical bool, how string) {
	d := &p.dir
	if target == "" {
		d.lose(how + " to a directory zot could not tell")
		return
	}
	if !filepath.IsAbs(target) && d.path == "" {
		return // relative to a directory already unknown
	}
	switch {
	case physical && (p.out.ranBefore != "" || p.out.unreadDocs > 0):
		d.lose(how + " -P after commands that may have changed the links it resolves")
		return
	case physical:
		real, ok := physicalDir(d.path, target)
		if !ok {
			d.lose(how + " -P to " + target + ", which zot cannot resolve now")
			return
		}
		target = real
	case dotDotAfterName(target):
		// bash resolves a/.. by what a is: it fails where a is no
		// directory, and goes where the link leads where chdir to the
		// cleaned path fails.
		d.lose(how + " to " + target + ", whose .. bash resolves by what the path names")
		return
	case !filepath.IsAbs(target):
		target = filepath.Join(d.path, target)
	}
	switch {
	case p.compound > 0:
		d.lose(how + " inside if/while/for/case/{ }, which may or may not run")
		return
	case p.andOr == andOrAfterOr:
		d.lose(how + " after ||, which may or may not run")
		return
	}
	d.path, d.why, d.mayFail = target, "", ""
	// Stat of dir/. looks a name up inside it, which needs the search
	// permission cd needs.
	if st, err := os.Stat(target + string(filepath.Separator) + "."); err != nil || !st.IsDir() {
		d.mayFail = how + " to " + target + ", which does not exist or cannot be entered now, may fail"
	} else if p.andOr == andOrAfterAnd {
		d.mayFail = how + " to " + target + " after && may not run"
	} else if p.out.ranBefore != "" {
		d.mayFail = how + " to " + target + " may fail: " + p.out.ranBefore + " ran before it and may have moved or removed it"
	} else if p.out.unreadDocs > 0 {
		d.mayFail = how + " to " + target + " may fail: a here-document before it may run commands that move or remove it"
	}
}

// keepsDirectories reports a command that cannot change a directory: the
// builtins that move between them, and those that only print or test.
func keepsDirectories(name string) bool {
	return quietCommands[name] || hasWord("cd pushd popd dirs command builtin pwd ls", name)
}

// joinDir is the directory a wrapper option (env -C, sudo -D) gives: a
// chdir, which follows links as it goes (a/.. is where a's link leads,
// less one), and leaves $PWD as it was.
func (p *shellParser) joinDir(r cmdReach, w shellWord, what string) (dir, why string) {
	switch {
	case !w.literal:
		return "", what + " to a directory known only at run time"
	case r.dir == "" && !filepath.IsAbs(w.val):
		return "", r.dirWhy
	}
	plain := filepath.Clean(w.val)
	if !filepath.IsAbs(plain) {
		plain = filepath.Join(r.dir, w.val)
	}
	real, ok := physicalDir(r.dir, w.val)
	switch {
	case !ok && strings.Contains("/"+w.val+"/", "/../"):
		return "", what + " to " + w.val + ", whose .. zot cannot resolve now"
	case !ok:
		return plain, "" // missing now: the wrapper fails, unless a command before makes it
	case real != plain && (p.out.ranBefore != "" || p.out.unreadDocs > 0):
		return "", what + " to " + w.val + ", through links a command before it may have changed"
	}
	return real, ""
}

// physicalDir is where chdir(target) from dir goes, each link followed
// and each .. taken from where the link led, as the file system is now.
func physicalDir(dir, target string) (string, bool) {
	if !filepath.IsAbs(target) {
		target = dir + string(filepath.Separator) + target // not Join: it would take a/.. away before the links are read
	}
	real, err := filepath.EvalSymlinks(target)
	return real, err == nil
}

// dotDotAfterName reports a .. that follows a name in path (a/..), which
// a cd resolves by what the name is.
func dotDotAfterName(path string) bool {
	named := false
	for _, part := range strings.Split(path, "/") {
		switch part {
		case "", ".":
		case "..":
			if named {
				return true
			}
		default:
			named = true
		}
	}
	return false
}
