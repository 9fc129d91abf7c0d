package main

import (
	"os"
	"path/filepath"
)

// splitForApproval is the line's simple commands, as words, when each is
// one an approval can be about: the splitter followed the whole line, no
// redirection writes a file or opens a socket (an approval of ls is not
// one of ls > ~/.bashrc), and the command was not found inside a wrapper
// (sudo, bash -c), is not given variables (GOFLAGS=… go test), either of
// which would let one prefix allow another program or other behaviour,
// and runs inside the directory the approvals are for (cd ..; rm -rf
// build/ is not the rm -rf build/ approved there).
func splitForApproval(line, cwd string) ([][]string, bool) {
	sc := ShellContext{Bash: bashToolShell().Bash, Cwd: cwd, Getenv: os.Getenv, FoldCase: foldCommandNames}
	split := SplitCommandLine(line, sc)
	if len(split.Unfollowed) > 0 || len(split.Commands) == 0 || len(split.Writes) > 0 {
		return nil, false
	}
	var out [][]string
	for _, c := range split.Commands {
		if c.Via != "" || len(c.Env) > 0 || len(c.Vars) > 0 || len(c.Words) == 0 || !underDir(c.Cwd, filepath.Clean(cwd)) {
			return nil, false
		}
		out = append(out, c.Words)
	}
	return out, true
}
