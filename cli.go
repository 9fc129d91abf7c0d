package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// What every zot command shares: the version, the exit statuses, usage
// errors, the flag reader of the management commands (zot ext, mcp,
// skills, validate), how a command answers -h/--help (commandHelp, below)
// and the signals that stop a command. main.go dispatches the commands;
// the plugins that own them use these.

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
// validate): switches, flags with a value (`--name VALUE` or `--name=VALUE`;
// a repeated one accumulates) and -h/--help. `--` ends the flags; the
// other words are returned in order.
func subcommandArgs(args []string, switches map[string]*bool, values map[string]*[]string) (words []string, help bool, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		switch {
		case a == "-h" || a == "--help":
			return nil, true, nil
		case a == "--":
			return append(words, args[i+1:]...), false, nil
		case switches[a] != nil:
			*switches[a] = true
		case values[name] != nil:
			if !hasValue {
				if i+1 >= len(args) {
					return nil, false, fmt.Errorf("%s needs a value", name)
				}
				i++
				value = args[i]
			}
			*values[name] = append(*values[name], value)
		case len(a) > 1 && a[0] == '-':
			return nil, false, fmt.Errorf("unknown flag %s", a)
		default:
			words = append(words, a)
		}
	}
	return words, false, nil
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
