package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// What a project's programs run beyond their command line, and what the
// sandbox keeps from the model's commands for them. A program zot starts
// outside the sandbox (a validator, a hook, an MCP server, an extension)
// runs files of the project it names — `./guard.sh`, `python3
// .claude/hooks/check.py`; git, which the user runs outside it, runs
// .git/hooks. The trust digest covers the content of every project file a
// program names, so that a change after trust un-trusts it; the sandbox
// makes them, and the project's configuration, read-only to commands; and
// each program is checked against what was trusted again before each
// start, so that a change made during the session does not run.

// namedProjectFiles are the regular files inside project (absolute) that
// words name — a program, an argument, the value of --opt=VALUE —
// relative words looked for beneath each of bases. The result is sorted,
// symlinks resolved.
func namedProjectFiles(project string, bases []string, words []string) []string {
	real, err := filepath.EvalSymlinks(project)
	if err != nil {
		return nil
	}
	var out []string
	for _, w := range words {
		if strings.HasPrefix(w, "-") {
			_, v, ok := strings.Cut(w, "=")
			if !ok {
				continue
			}
			w = v
		}
		if w == "" {
			continue
		}
		candidates := []string{w}
		if !filepath.IsAbs(w) {
			candidates = nil
			for _, b := range bases {
				candidates = append(candidates, filepath.Join(b, w))
			}
		}
		for _, c := range candidates {
			p, err := filepath.EvalSymlinks(c)
			if err != nil || !within(p, real) || slices.Contains(out, p) {
				continue
			}
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

// withNamedFiles records the project files an entry's program names in
// e: in Files (what the sandbox protects) and, as their digests, in
// Content (what trust covers).
func withNamedFiles(e trustEntry, project string, files []string) trustEntry {
	e.Files = files
	if len(files) == 0 {
		return e
	}
	real, err := filepath.EvalSymlinks(project)
	if err != nil {
		real = project
	}
	var parts []string
	for _, f := range files {
		parts = append(parts, relTo(real, f)+" "+fileDigest(f))
	}
	if e.Content != "" {
		e.Content += ", "
	}
	e.Content += "files " + strings.Join(parts, ", ")
	return e
}

// hookWords are the words of a hook's shell command line, as far as they
// can name files: $CLAUDE_PROJECT_DIR put in, operators taken as spaces.
func hookWords(command, project string) []string {
	command = strings.NewReplacer("${CLAUDE_PROJECT_DIR}", project, "$CLAUDE_PROJECT_DIR", project).Replace(command)
	command = strings.NewReplacer(";", " ", "|", " ", "&", " ", "<", " ", ">", " ", "(", " ", ")", " ", "`", " ").Replace(command)
	words, err := splitExecutor(command)
	if err != nil {
		words = strings.Fields(command)
	}
	return words
}

// fileDigest is the SHA-256 of a file's content, or why it cannot be read
// (which changes when the file appears). Only a regular file is read: a
// FIFO put in its place does not hold zot.
func fileDigest(path string) string {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return "unreadable"
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "not a regular file"
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unreadable"
	}
	return hex.EncodeToString(h.Sum(nil))
}

// projectControlPaths are the project's files and directories that
// configure programs running outside the sandbox: .zot/, .claude/,
// .mcp.json, and the hooks and configuration of its git repository (a
// worktree's .git file, and the directories it points to).
func projectControlPaths(cwd string) []string {
	paths := []string{filepath.Join(cwd, ".zot"), filepath.Join(cwd, ".claude"), filepath.Join(cwd, ".mcp.json")}
	real, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return paths
	}
	dotGit := filepath.Join(projectRoot(real), ".git")
	st, err := os.Lstat(dotGit)
	switch {
	case err != nil:
		return paths
	case st.IsDir():
		return append(paths, filepath.Join(dotGit, "hooks"), filepath.Join(dotGit, "config"))
	}
	// A worktree or a submodule: .git names the git directory, and that
	// one the common directory whose hooks and config the worktree uses.
	paths = append(paths, dotGit)
	gitDir := pointedDir(dotGit, "gitdir: ", filepath.Dir(dotGit))
	if gitDir == "" {
		return paths
	}
	paths = append(paths, filepath.Join(gitDir, "hooks"), filepath.Join(gitDir, "config"), filepath.Join(gitDir, "config.worktree"))
	if common := pointedDir(filepath.Join(gitDir, "commondir"), "", gitDir); common != "" {
		paths = append(paths, filepath.Join(common, "hooks"), filepath.Join(common, "config"))
	}
	return paths
}

// pointedDir reads the directory a git pointer file names after prefix,
// relative to base; "" when there is none.
func pointedDir(path, prefix, base string) string {
	b, err := readUntrustedFile(path, 4<<10)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
	if !ok || dir == "" {
		return ""
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(base, dir)
	}
	return filepath.Clean(dir)
}

// sandboxProtected are the paths the sandbox keeps read-only to commands
// (those it finds in its writable set): the project's control paths and
// every project file its programs name.
func sandboxProtected(cwd string, entries []trustEntry) []string {
	out := projectControlPaths(cwd)
	for _, e := range entries {
		for _, f := range e.Files {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// stillTrusted is the check before a project program starts again: the
// entry as it is now must be one the user trusted — its command line and
// the content of the files it names. what names it in the refusal.
func (s *setup) stillTrusted(e trustEntry, what string) error {
	if s.approved(e) {
		return nil
	}
	return fmt.Errorf("%s changed since this directory was trusted (its command line, or a file it runs: %s): not run; zot trust %s", what, strings.Join(relAll(s.cwd, e.Files), ", "), quoteDir(s.cwd))
}

func relAll(dir string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = relTo(dir, p)
	}
	if len(out) == 0 {
		return []string{"none named"}
	}
	return out
}
