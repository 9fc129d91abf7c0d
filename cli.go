package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// What every zot command shares: the version, the exit statuses, usage
// errors, the flag reader of the management commands (zot ext, mcp,
// skills, validate) and the signals that stop a command. main.go
// dispatches the commands; the plugins that own them use these.

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
