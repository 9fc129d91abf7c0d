package main

// A command line that is one program and its literal arguments runs
// without bash. bash -c would only look the program up and exec it in its
// own place (it does not fork for the last simple command), so zot does
// that itself and saves the shell's start: its dynamic linking and locale
// setup, two to three milliseconds of every such call. GNU make takes the
// same shortcut for recipe lines without shell syntax. Whatever bash would
// add sends the line to bash as before: any expansion or quoting this
// reader does not take exactly as bash does, a keyword or builtin, a
// redirection, a second command, and anything bash reads at its start
// (BASH_ENV, SHELLOPTS, exported functions...). What the program gets is
// what bash 5 would give it: the same argv (argv[0] as typed), the same
// directory, descriptors and session, and the environment with bash's
// three changes (PWD, SHLVL and _).

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// directRun is a command line that runs without the shell: argv as bash
// would pass it, the file to execute (and what stat said of it when the
// search took it), and the variables bash would set.
type directRun struct {
	argv   []string
	path   string
	stat   *syscall.Stat_t // of path
	addEnv []string
}

// directCommand says whether line runs without the shell in dir with the
// environment env (the child's, before startProc adds PWD), and how.
func directCommand(line, dir string, env []string) (directRun, bool) {
	if runtime.GOOS != "linux" || !bashToolShell().Bash {
		return directRun{}, false // bash 5's behaviour is what the equivalence was checked against
	}
	words, ok := literalWords(line)
	if !ok || len(words) == 0 {
		return directRun{}, false
	}
	// A first word with = may be an assignment; without, it is none. One
	// that starts with % names a job.
	name := words[0]
	if name == "" || strings.Contains(name, "=") || name[0] == '%' || bashReserved()[name] && !(name == "echo" && plainEchoArgs(words[1:])) {
		return directRun{}, false
	}
	shlvl, pathList, ok := bashStartEnv(env)
	if !ok || !bashIs5() {
		return directRun{}, false
	}
	run := directRun{argv: words}
	if strings.Contains(name, "/") {
		file := name
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		standing, stat := executable(file)
		if standing != takeIt {
			return directRun{}, false // bash says why, in its words
		}
		// The path as typed, as bash passes it to exec: a script's
		// interpreter gets it as the script's name ($0).
		run.path, run.stat, run.addEnv = name, stat, []string{"SHLVL=" + shlvl, "_=" + name}
		return run, true
	}
	for _, entry := range strings.Split(pathList, ":") {
		file := filepath.Join(entry, name)
		switch standing, stat := executable(file); standing {
		case takeIt:
			if name == "echo" && file != "/usr/bin/echo" && file != "/bin/echo" {
				return directRun{}, false // bash's own echo runs, not the first echo on $PATH
			}
			run.path, run.stat, run.addEnv = file, stat, []string{"SHLVL=" + shlvl, "_=" + file}
			return run, true
		case askBash:
			return directRun{}, false
		}
	}
	return directRun{}, false // not found: bash's "command not found"
}

// bashIs5 reads the bash tool's bash's version, once, from the mark every
// bash since 2.0 carries in its binary ("@(#)Bash version 5.2.15(1)
// release GNU"): bash 4 leaves SHLVL one higher in what it execs. Asking
// a bash to print it would cost a bash start (5 ms here) in every zot; a
// binary without the mark is taken for another version.
var bashIs5 = sync.OnceValue(func() bool {
	f, err := os.Open(bashToolShell().Path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	return err == nil && versionMarkIs5(f, st.Size())
})

// versionMarkIs5 says whether the last of bash's version marks in the
// size bytes of f names version 5. It reads from the end: the mark is in
// the read-only data, which follows the code, four fifths into Debian's
// bash, so reading from the start cost a millisecond of each zot that ran
// a command.
func versionMarkIs5(f io.ReaderAt, size int64) bool {
	const mark = "@(#)Bash version "
	const chunk = 64 << 10
	// Each read overlaps the next one's start by a mark, its digit and
	// what follows, so that a mark across the boundary is whole in one.
	const overlap = len(mark) + 2
	buf := make([]byte, chunk+overlap)
	for end := size; end > 0; end -= chunk {
		start := max(end-chunk, 0)
		n, err := f.ReadAt(buf[:min(end+int64(overlap), size)-start], start)
		if err != nil && err != io.EOF {
			return false
		}
		b := buf[:n]
		if i := lastIndex(b, []byte(mark)); i >= 0 && i+len(mark) < len(b) {
			return b[i+len(mark)] == '5' && (i+len(mark)+1 == len(b) || b[i+len(mark)+1] == '.')
		}
	}
	return false
}

// lastIndex is bytes.LastIndex for a sep that is rare in b: it searches
// forward, as bytes.Index does with vector instructions, where
// bytes.LastIndex hashes its way back a byte at a time (40 times slower
// over the 256 KiB after bash's mark, a third of a millisecond).
func lastIndex(b, sep []byte) int {
	last := -1
	for from := 0; ; {
		i := bytes.Index(b[from:], sep)
		if i < 0 {
			return last
		}
		last = from + i
		from = last + 1
	}
}

// bashStartEnv reads what of env bash 5 would act on at its start: SHLVL
// as the exec'd program gets it (bash adds one and takes it back before
// the exec) and $PATH. ok is false for an environment that makes bash do
// more than look the program up: a file it reads first (BASH_ENV; over
// ssh, ~/.bashrc), shell options (SHELLOPTS, BASHOPTS: xtrace would print
// the command), POSIX mode, exported functions (a function may shadow the
// program), names hidden from the search (EXECIGNORE), a variable bash
// sets, drops or warns about (bashOwnVars, BASH*, an OLDPWD that is no
// directory, an LC_ALL that may name no installed locale), a $PATH with a
// relative or unclean entry (searched from the directory, or named
// otherwise in $_), and a SHLVL bash would rewrite or warn about.
func bashStartEnv(env []string) (shlvl, pathList string, ok bool) {
	shlvl, havePath, overSSH := "0", false, false
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "BASH"), bashOwnVars[name], name == "SHELLOPTS", name == "POSIXLY_CORRECT", name == "EXECIGNORE":
			return "", "", false
		case name == "OLDPWD":
			if st, err := os.Stat(value); err != nil || !st.IsDir() {
				return "", "", false
			}
		case name == "LC_ALL":
			if value != "" && value != "C" && value != "POSIX" && value != "C.UTF-8" && value != "C.utf8" {
				return "", "", false
			}
		case name == "SSH_CLIENT", name == "SSH2_CLIENT":
			overSSH = true
		case name == "SHLVL":
			if value == "" {
				shlvl = "0"
				break
			}
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 || n > 998 || value[0] == '+' {
				return "", "", false
			}
			shlvl = strconv.Itoa(n)
		case name == "PATH":
			pathList, havePath = value, true
		}
	}
	// Debian's bash, started by sshd (SSH_CLIENT, a first shell), reads
	// ~/.bashrc even for -c.
	if !havePath || pathList == "" || overSSH && shlvl == "0" {
		return "", "", false
	}
	for _, entry := range strings.Split(pathList, ":") {
		if !filepath.IsAbs(entry) || filepath.Clean(entry) != entry {
			return "", "", false
		}
	}
	return shlvl, pathList, true
}

// bashOwnVars are the variables a bash 5 -c, given them in its
// environment, passes on changed or not at all (checked one by one
// against env run directly and by bash -c).
var bashOwnVars = map[string]bool{
	"IFS": true, "LINENO": true, "OPTIND": true, "OPTERR": true, "PS1": true, "PS2": true, "PS4": true,
	"PPID": true, "RANDOM": true, "SRANDOM": true, "HISTCMD": true, "COMP_WORDBREAKS": true,
	"EPOCHSECONDS": true, "EPOCHREALTIME": true,
}

// A file's standing in bash's search of $PATH.
type searchStanding int

const (
	passOver searchStanding = iota // missing, a directory, or not executable: bash searches on
	takeIt                         // a regular file zot may execute: bash runs this one
	askBash                        // executable but no regular file: bash would try it; zot leaves it to bash
)

// executable is file's standing, and its stat when zot may execute it. A
// search of $PATH calls it for each entry, and most have no such file:
// the plain system call there makes no FileInfo to throw away.
func executable(file string) (searchStanding, *syscall.Stat_t) {
	var st syscall.Stat_t
	err := syscall.Stat(file, &st)
	for err == syscall.EINTR {
		err = syscall.Stat(file, &st)
	}
	switch {
	case err != nil || st.Mode&syscall.S_IFMT == syscall.S_IFDIR || syscall.Access(file, 1 /* X_OK */) != nil:
		return passOver, nil
	case st.Mode&syscall.S_IFMT == syscall.S_IFREG:
		return takeIt, &st
	}
	return askBash, nil
}

// plainEchoArgs: bash's builtin echo and the echo program print these
// arguments alike (no option, no backslash escape).
func plainEchoArgs(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.Contains(a, `\`) {
			return false
		}
	}
	return true
}

// literalWords splits line into the words bash reads in it when every word
// is literal: characters that are no shell syntax, single-quoted text, and
// double-quoted text without $, ` or \. Anything else is not ok: an
// expansion, a glob, a comment, an operator, a backslash, a newline
// outside quotes (but at the end) or a NUL.
func literalWords(line string) (words []string, ok bool) {
	line = strings.TrimRight(line, " \t\n")
	if strings.IndexByte(line, 0) >= 0 {
		return nil, false
	}
	var word strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, word.String()), false
				word.Reset()
			}
			continue
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, false
			}
			word.WriteString(line[i+1 : i+1+end])
			i += end + 1
		case c == '"':
			end := strings.IndexByte(line[i+1:], '"')
			if end < 0 || strings.ContainsAny(line[i+1:i+1+end], "$`\\") {
				return nil, false
			}
			word.WriteString(line[i+1 : i+1+end])
			i += end + 1
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-_./,:@%+=^", c) >= 0:
			word.WriteByte(c)
		default:
			return nil, false
		}
		inWord = true
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, true
}

// bashReserved are bash's keywords and builtins (compgen -k, compgen -b):
// a command word bash runs itself, or reads as syntax.
var bashReserved = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, name := range strings.Fields(`! [[ ]] { } case coproc do done elif else esac fi for function if in select then time until while
		. : [ alias bg bind break builtin caller cd command compgen complete compopt continue declare dirs disown echo
		enable eval exec exit export false fc fg getopts hash help history jobs kill let local logout mapfile popd
		printf pushd pwd read readarray readonly return set shift shopt source suspend test times trap true type
		typeset ulimit umask unalias unset wait`) {
		m[name] = true
	}
	return m
})

// bashLineOnlyReads says whether a bash call's line runs, directly, a
// program of the system's that writes no file whatever its arguments
// (onlyReaders): such a call changes nothing a checkpoint would record,
// as a read does not. Its line has no redirection, being literal words; a
// line bash runs is never taken for one.
func bashLineOnlyReads(raw json.RawMessage) bool {
	args, err := ParseBashArgs(raw)
	if err != nil {
		return false
	}
	if first, _, _ := strings.Cut(strings.TrimLeft(args.Command, " \t"), " "); !onlyReaders[strings.Trim(first, `'"`)] {
		return false // no such program: spare the search of $PATH
	}
	env, err := envNoSecrets.environ()
	if err != nil {
		return false
	}
	run, ok := directCommand(args.Command, "/", env)
	if !ok || !onlyReaders[run.argv[0]] || run.path != "/usr/bin/"+run.argv[0] && run.path != "/bin/"+run.argv[0] {
		return false
	}
	// The system's own file, as the search found it: root's, and no one
	// else may write it.
	return run.stat.Uid == 0 && run.stat.Mode&0o022 == 0
}

// onlyReaders are programs (coreutils', diffutils', grep) that write nothing but their
// standard output and error, whatever their arguments: none of them has an
// option that names a file to write (sort -o, uniq's second operand, tee,
// file -C, tree -o and find -delete are why those are not here).
var onlyReaders = map[string]bool{
	"cat": true, "ls": true, "head": true, "tail": true, "wc": true, "grep": true, "echo": true,
	"stat": true, "du": true, "df": true, "diff": true, "cmp": true, "basename": true, "dirname": true,
	"realpath": true, "readlink": true, "printenv": true, "uname": true, "id": true, "whoami": true,
	"nproc": true, "md5sum": true, "sha1sum": true, "sha256sum": true, "sha512sum": true, "sleep": true,
}
