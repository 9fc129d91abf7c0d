package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// What every zot command shares: the version, the exit statuses, usage
// errors, the flag reader of the management commands (zot ext, mcp,
// skills, validate), how a command answers -h/--help (commandHelp, below),
// the signals that stop a command, and installing a directory (zot ext
// install, zot plugin install). main.go dispatches the commands; the
// plugins that own them use these.

const version = "0.1.0"

// Exit codes.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitInterrupted = 130
)

// usageError is a mistake on the command line: exit 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// signalContext is cancelled by SIGINT, SIGTERM or SIGHUP (the terminal or
// ssh session went away): the one way to stop.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
}

// subcommandArgs reads the flags of a management command (zot mcp, skills,
// validate): switches and flags with a value (`--name VALUE` or
// `--name=VALUE`; a repeated one accumulates). `--` ends the flags; the
// other words are returned in order. -h/--help never reach it: run in
// main.go answers them first (commandHelp).
func subcommandArgs(args []string, switches map[string]*bool, values map[string]*[]string) (words []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		switch {
		case a == "--":
			return append(words, args[i+1:]...), nil
		case switches[a] != nil:
			*switches[a] = true
		case values[name] != nil:
			if !hasValue {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("%s needs a value", name)
				}
				i++
				value = args[i]
			}
			*values[name] = append(*values[name], value)
		case len(a) > 1 && a[0] == '-':
			return nil, fmt.Errorf("unknown flag %s", a)
		default:
			words = append(words, a)
		}
	}
	return words, nil
}

// commandArgs reads a management command's words and flags as
// subcommandArgs does, and its --cwd: the last one given, else the current
// directory, made absolute. A mistake is reported on stderr with the
// command's usage and ok is false: the command exits exitUsage.
func commandArgs(c *commandHelp, args []string, switches map[string]*bool, values map[string]*[]string, stderr io.Writer) (words []string, dir string, ok bool) {
	var cwds []string
	if values == nil {
		values = map[string]*[]string{}
	}
	values["--cwd"] = &cwds
	words, err := subcommandArgs(args, switches, values)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n%s", c.name, err, c.text(""))
		return nil, "", false
	}
	dir, err = workingDir(lastOr(cwds, ""))
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
		return nil, "", false
	}
	return words, dir, true
}

// stderrLog writes a printf-style message to w as one "zot: " line,
// sanitised: the messages name files and entries from outside.
func stderrLog(w io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(w, "zot: %s\n", sanitize(fmt.Sprintf(format, args...)))
	}
}

// lastOr is the last of a repeatable flag's values, or def.
func lastOr(vs []string, def string) string {
	if len(vs) == 0 {
		return def
	}
	return vs[len(vs)-1]
}

// Help: the one pattern every zot command follows, so that a newcomer's
// `--help` never runs anything. `-h` or `--help` anywhere before `--`
// prints the usage of the command (or of its subcommand) on stdout and
// exits 0 before anything is read, started or checked; `zot CMD help
// [SUB]` and `zot help CMD [SUB]` print the same. Usage mistakes print it
// on stderr and exit 2.
//
// A command describes itself in a commandHelp and is registered in main.go's
// commands table, whose dispatcher calls answerHelp first: a command needs
// no help handling of its own. TestEveryCommandAnswersHelp runs the real
// binary over every entry and subcommand of the table.
type commandHelp struct {
	name  string // "zot ext"
	about string // what the command is for, one line
	// usage is the synopsis of a command without subcommands
	// ("zot validate [--json] -- COMMAND LINE").
	usage string
	subs  []subcommandHelp
	notes string // after the synopsis or the list of subcommands
}

// subcommandHelp is one subcommand: `zot ext list -h` prints its synopsis,
// summary and detail; `zot ext -h` lists the synopses and summaries.
type subcommandHelp struct {
	name, args, summary string // "list", "[--project] [--json]", "installed extensions"
	detail              string
}

func (c *commandHelp) sub(name string) *subcommandHelp {
	for i := range c.subs {
		if c.subs[i].name == name {
			return &c.subs[i]
		}
	}
	return nil
}

// text is the usage of the command, or of its subcommand sub when there
// is one by that name.
func (c *commandHelp) text(sub string) string {
	var b strings.Builder
	if s := c.sub(sub); s != nil {
		fmt.Fprintf(&b, "Usage: %s %s %s\n\n%s\n", c.name, s.name, s.args, s.summary)
		for _, more := range []string{s.detail, c.notes} {
			if more != "" {
				fmt.Fprintf(&b, "\n%s", more)
			}
		}
		return b.String()
	}
	fmt.Fprintf(&b, "%s — %s\n\nUsage:\n", c.name, c.about)
	if c.usage != "" {
		fmt.Fprintf(&b, "  %s\n", c.usage)
	}
	width := 0
	for _, s := range c.subs {
		width = max(width, len(c.name)+len(s.name)+len(s.args)+2)
	}
	for _, s := range c.subs {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, c.name+" "+s.name+" "+s.args, s.summary)
	}
	if c.notes != "" {
		fmt.Fprintf(&b, "\n%s", c.notes)
	}
	return b.String()
}

// misuse reports on stderr what is wrong with words, the words a command
// of subcommands was given that none of its cases took: an unknown
// subcommand, an argument missing (its name in the synopsis: "NAME is
// missing"), or arguments too many; then the usage. It returns
// exitUsage.
func (c *commandHelp) misuse(words []string, stderr io.Writer) int {
	var s *subcommandHelp
	if len(words) > 0 {
		s = c.sub(words[0])
	}
	if s == nil {
		if len(words) > 0 {
			fmt.Fprintf(stderr, "%s: unknown command %q\n", c.name, words[0])
		}
		fmt.Fprint(stderr, c.text(""))
		return exitUsage
	}
	var required []string
	depth := 0
	for _, f := range strings.Fields(s.args) {
		if depth == 0 && f[0] != '[' && strings.Trim(f, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == "" {
			required = append(required, f)
		}
		depth += strings.Count(f, "[") - strings.Count(f, "]")
	}
	given := words[1:]
	switch {
	case len(given) < len(required):
		missing := required[len(given):]
		verb := " is"
		if len(missing) > 1 {
			verb = " are"
		}
		fmt.Fprintf(stderr, "%s %s: %s%s missing\n", c.name, s.name, strings.Join(missing, " and "), verb)
	default:
		fmt.Fprintf(stderr, "%s %s: too many arguments (%s)\n", c.name, s.name, strings.Join(given, " "))
	}
	fmt.Fprint(stderr, c.text(s.name))
	return exitUsage
}

// answerHelp prints the usage args ask for, if they ask: -h or --help
// before `--`, or a first word `help` for a command with subcommands.
func (c *commandHelp) answerHelp(args []string, stdout io.Writer) bool {
	sub := ""
	if len(args) > 0 {
		sub = args[0]
	}
	asked := false
	for i, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || (i == 0 && a == "help" && len(c.subs) > 0) {
			asked = true
		}
	}
	if !asked {
		return false
	}
	if sub == "help" {
		sub = ""
		if len(args) > 1 {
			sub = args[1]
		}
	}
	io.WriteString(stdout, c.text(sub))
	return true
}

// installTree installs src — a directory, or a git URL cloned with --depth
// 1 — as root/<name>, where name is what nameOf reads from the copy (and
// so checks it). kind names what is installed in messages ("extension",
// "plugin"). Everything happens in a staging directory beside the
// destination, so a failure leaves nothing behind and success is one
// rename; force replaces an installed one the same way.
func installTree(kind, src, root string, force bool, nameOf func(dir string) (string, error)) (dest string, err error) {
	st, statErr := os.Stat(src)
	local := statErr == nil && st.IsDir()
	var srcAbs string
	if local {
		srcAbs, _ = filepath.Abs(src)
		if real, err := filepath.EvalSymlinks(srcAbs); err == nil {
			srcAbs = real // copy what a symlinked directory points to
		}
		if _, err := nameOf(srcAbs); err != nil {
			return "", err
		}
		if rootAbs, _ := filepath.Abs(root); rootAbs == srcAbs || strings.HasPrefix(rootAbs, srcAbs+string(filepath.Separator)) {
			return "", fmt.Errorf("cannot install %s into %s, which is inside it", srcAbs, root)
		}
	} else if !looksLikeGitURL(src) {
		return "", fmt.Errorf("%s is neither a directory nor a git URL", src)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", root, err)
	}
	staging, err := os.MkdirTemp(root, ".install-")
	if err != nil {
		return "", fmt.Errorf("create a staging directory in %s: %w", root, err)
	}
	defer os.RemoveAll(staging)
	if local {
		if err := copyTree(srcAbs, staging); err != nil {
			return "", fmt.Errorf("copy %s: %w", srcAbs, err)
		}
	} else if err := gitClone(src, staging); err != nil {
		return "", err
	}
	name, err := nameOf(staging)
	if err != nil {
		return "", fmt.Errorf("%s: %w", src, err)
	}
	dest = filepath.Join(root, name)
	if dest == srcAbs {
		return "", fmt.Errorf("%s %q is already installed at %s", kind, name, dest)
	}
	if _, err := os.Lstat(dest); err == nil {
		if !force {
			return "", fmt.Errorf("%s %q is already installed at %s; use --force to replace it", kind, name, dest)
		}
		old := staging + ".old"
		if err := os.Rename(dest, old); err != nil {
			return "", fmt.Errorf("move the old %s aside: %w", dest, err)
		}
		if err := os.Rename(staging, dest); err != nil {
			os.Rename(old, dest)
			return "", fmt.Errorf("install %q at %s: %w", name, dest, err)
		}
		os.RemoveAll(old)
	} else if err := os.Rename(staging, dest); err != nil {
		return "", fmt.Errorf("install %q at %s: %w", name, dest, err)
	}
	return dest, nil
}

// removeTree deletes an installed directory: renamed away first, so it
// disappears whole even if deleting its files fails halfway.
func removeTree(dir string) error {
	trash, err := os.MkdirTemp(filepath.Dir(dir), ".remove-")
	if err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	defer os.RemoveAll(trash)
	if err := os.Rename(dir, filepath.Join(trash, "x")); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

func looksLikeGitURL(s string) bool {
	return strings.Contains(s, "://") || strings.HasPrefix(s, "git@") || strings.HasSuffix(s, ".git")
}

func gitClone(url, dir string) error {
	ctx, stop := signalContext()
	defer stop()
	spec := procSpec{argv: []string{"git", "clone", "--quiet", "--depth", "1", "--", url, dir}, env: envNoSecrets,
		addEnv: []string{"GIT_TERMINAL_PROMPT=0"}, stderr: streamStdout}
	run, err := runToEnd(ctx, spec, nil, 64<<10, time.Second)
	switch {
	case err != nil:
		return fmt.Errorf("git clone %s: %v", url, err)
	case run.stopped:
		return fmt.Errorf("git clone %s: interrupted", url)
	case !run.state.Success():
		return fmt.Errorf("git clone %s: %v: %s", url, run.state, strings.TrimSpace(string(run.stdout.Bytes())))
	}
	return nil
}

// copyTree copies a directory: files keep their mode, symlinks stay links,
// anything else (devices, sockets) is refused.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			if rel == "." {
				return os.Chmod(dst, mode.Perm()|0o700)
			}
			return os.Mkdir(target, mode.Perm()|0o700)
		case mode&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case mode.IsRegular():
			return copyFile(path, target, mode.Perm())
		default:
			return fmt.Errorf("%s is not a file, directory or symlink", path)
		}
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// shellQuote is one word for a shell command line (zot validate's, a
// prompt template's !`command`): the word as it is when no shell gives any
// of its characters a meaning, else in single quotes, where a quote of its
// own ends them, is escaped, and opens them again.
func shellQuote(w string) string {
	plain := w != ""
	for i := 0; i < len(w) && plain; i++ {
		c := w[i]
		plain = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_./:,=+@%", c) >= 0
	}
	if plain {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// workingDir is a management command's --cwd made absolute, or the
// working directory when it is "". One that is not a directory is an
// error: rules and configuration looked for under a mistyped path would
// answer for a project that is not there.
func workingDir(cwd string) (string, error) {
	given := cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	dir, err := filepath.Abs(cwd)
	if st, serr := os.Stat(dir); err != nil || serr != nil || !st.IsDir() {
		if given == "" {
			return "", fmt.Errorf("the working directory cannot be read")
		}
		return "", fmt.Errorf("--cwd %s is not a directory", given)
	}
	return dir, nil
}
