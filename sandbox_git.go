package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// What git reads to decide what it runs, for the project's work tree: the
// sandbox guards it (sandbox_guard.go), since git runs outside the sandbox
// when the user types `git status`. Git finds its directory through
// `.git` (a directory, or a file naming one), that directory's
// `commondir`, and the submodules its index records; it runs what the
// config of those directories says (core.fsmonitor, core.hooksPath,
// filters, aliases …) and the hooks in them. Objects, refs and the index's
// other entries decide no program, and stay the command's to change.

// gitMaxDepth bounds how deep submodules inside submodules are followed.
const gitMaxDepth = 4

// gitGuarded lists the guarded paths of the repository whose work tree is
// root, and of the directories from cwd up to root that have no `.git`
// (one created there would be git's directory from then on). home is the
// user's home directory, for `~/` in config values; "" when unknown.
func gitGuarded(root, cwd, home string) []guardedPath {
	var out []guardedPath
	for d := cwd; withinDir(d, root) && d != root; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err != nil {
			out = append(out, guardedPath{Path: filepath.Join(d, ".git"), Kind: guardDir})
		}
	}
	seen := map[string]bool{}
	return append(out, gitWorkTreeGuarded(root, home, 0, seen)...)
}

// gitWorkTreeGuarded is gitGuarded for one work tree: its `.git`, the git
// directory it leads to, and, depth permitting, the submodules it records.
func gitWorkTreeGuarded(root, home string, depth int, seen map[string]bool) []guardedPath {
	dotGit := filepath.Join(root, ".git")
	st, err := os.Lstat(dotGit)
	if err != nil {
		// None: a .git made later would be git's directory.
		return []guardedPath{{Path: dotGit, Kind: guardDir}}
	}
	var out []guardedPath
	gitDir := dotGit
	switch {
	case st.IsDir():
		out = append(out, guardedPath{Path: dotGit, Kind: guardDir, Bind: bindPin})
	case st.Mode()&os.ModeSymlink != 0:
		// A link to the git directory: the link is guarded, and where
		// it leads.
		out = append(out, guardedPath{Path: dotGit, Kind: guardFile, Bind: bindReadOnly})
		if gitDir, err = filepath.EvalSymlinks(dotGit); err != nil {
			return out
		}
	default:
		// A worktree's or a submodule's `gitdir: …` file.
		out = append(out, guardedPath{Path: dotGit, Kind: guardFile, Bind: bindReadOnly})
		if gitDir = gitPointer(dotGit, "gitdir: ", root); gitDir == "" {
			return out
		}
	}
	return append(out, gitDirGuarded(gitDir, root, home, depth, seen)...)
}

// gitDirGuarded lists what decides, in the git directory gitDir of the work
// tree root, which programs git runs; and the same for its common directory,
// its other worktrees' administrative files and its submodules.
func gitDirGuarded(gitDir, root, home string, depth int, seen map[string]bool) []guardedPath {
	if real, err := filepath.EvalSymlinks(gitDir); err == nil {
		gitDir = real
	}
	if seen[gitDir] {
		return nil
	}
	seen[gitDir] = true
	at := func(dir, name string) string { return filepath.Join(dir, name) }
	out := []guardedPath{
		{Path: at(gitDir, "commondir"), Kind: guardFile, Bind: bindReadOnly},
		{Path: at(gitDir, "config.worktree"), Kind: guardFile, Bind: bindReadOnly},
		{Path: at(gitDir, "gitdir"), Kind: guardFile, Bind: bindReadOnly},
		{Path: at(gitDir, "HEAD"), Kind: guardHead},
		{Path: at(gitDir, "index"), Kind: guardIndex, Root: root},
		{Path: at(gitDir, "rebase-merge/git-rebase-todo"), Kind: guardTodo},
	}
	common := gitDir
	if c := gitPointer(at(gitDir, "commondir"), "", gitDir); c != "" {
		if real, err := filepath.EvalSymlinks(c); err == nil {
			common = real
		}
	}
	if common != gitDir {
		out = append(out, guardedPath{Path: common, Kind: guardDir, Bind: bindPin},
			guardedPath{Path: at(common, "rebase-merge/git-rebase-todo"), Kind: guardTodo})
	}
	out = append(out,
		guardedPath{Path: at(common, "config"), Kind: guardFile, Bind: bindReadOnly},
		guardedPath{Path: at(common, "hooks"), Kind: guardTree, Bind: bindReadOnly},
		guardedPath{Path: at(common, "info"), Kind: guardTree, Bind: bindReadOnly},
		// Without them git no longer takes the directory for one, and
		// looks further: at the work tree itself as a bare repository.
		guardedPath{Path: at(common, "objects"), Kind: guardIsDir},
		guardedPath{Path: at(common, "refs"), Kind: guardIsDir},
	)
	if common == gitDir || !seen[common] {
		seen[common] = true
		for _, cfg := range []string{at(common, "config"), at(gitDir, "config.worktree")} {
			out = append(out, gitConfigGuarded(cfg, root, home)...)
		}
		// Other worktrees: where each is and which common directory it uses.
		if names, err := os.ReadDir(at(common, "worktrees")); err == nil {
			for _, n := range names {
				wt := at(at(common, "worktrees"), n.Name())
				for _, f := range []string{"gitdir", "commondir", "config.worktree"} {
					out = append(out, guardedPath{Path: at(wt, f), Kind: guardFile, Bind: bindReadOnly})
				}
				out = append(out, guardedPath{Path: at(wt, "rebase-merge/git-rebase-todo"), Kind: guardTodo})
			}
		}
	}
	if depth >= gitMaxDepth {
		return out
	}
	// The submodules the index records: git runs git in each that has a
	// repository, with that repository's config and hooks. Read only
	// where .gitmodules says there are some, so that a start does not
	// read a large index for nothing; one a command records later is the
	// guard's business (guardIndex).
	if _, err := os.Lstat(filepath.Join(root, ".gitmodules")); err != nil {
		return out
	}
	if data, err := os.ReadFile(at(gitDir, "index")); err == nil {
		links, _ := indexGitlinks(data, gitHashLen(at(common, "config")))
		for _, l := range links {
			sub := filepath.Join(root, filepath.FromSlash(l))
			if _, err := os.Lstat(filepath.Join(sub, ".git")); err == nil {
				out = append(out, gitWorkTreeGuarded(sub, home, depth+1, seen)...)
			}
		}
	}
	return out
}

// gitPointer reads the directory a git pointer file (`.git`, commondir,
// gitdir) names after prefix, relative to base; "" when there is none.
func gitPointer(path, prefix, base string) string {
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

// gitConfigGuarded are the project files and directories a git config
// file names: the files it includes, core.hooksPath (a directory of
// hooks), and every word of a value that names an existing file —
// core.fsmonitor = ./tools/watch.sh, a filter's or an alias's script.
// Relative words are read from the work tree root, where git runs them.
func gitConfigGuarded(path, root, home string) []guardedPath {
	entries, err := readGitConfig(path)
	if err != nil {
		return nil
	}
	var out []guardedPath
	resolve := func(p, base string) string {
		switch {
		case strings.HasPrefix(p, "~/") && home != "":
			p = filepath.Join(home, p[2:])
		case !filepath.IsAbs(p):
			p = filepath.Join(base, p)
		}
		return filepath.Clean(p)
	}
	for _, e := range entries {
		key, value := e[0], e[1]
		switch {
		case strings.HasSuffix(key, ".path") && (strings.HasPrefix(key, "include.") || strings.HasPrefix(key, "includeif.")):
			out = append(out, guardedPath{Path: resolve(value, filepath.Dir(path)), Kind: guardFile, Bind: bindReadOnly})
			continue
		case key == "core.hookspath":
			out = append(out, guardedPath{Path: resolve(value, root), Kind: guardTree, Bind: bindReadOnly})
			continue
		}
		for _, w := range strings.FieldsFunc(value, func(r rune) bool { return strings.ContainsRune(" \t;|&()<>'\"`=", r) }) {
			w = strings.TrimPrefix(w, "!")
			if w == "" || strings.HasPrefix(w, "-") {
				continue
			}
			p := resolve(w, root)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && withinDir(p, root) {
				out = append(out, guardedPath{Path: p, Kind: guardFile, Bind: bindReadOnly})
			}
		}
	}
	return out
}

// readGitConfig reads a git config file as (section.key, value) pairs,
// section and key in lower case, a subsection kept as written between
// them (remote.origin.url); a key without a value is "true". It follows
// git's syntax as far as naming files needs: comments, quotes, escapes,
// continued lines.
func readGitConfig(path string) ([][2]string, error) {
	data, err := readUntrustedFile(path, 1<<20)
	if err != nil {
		return nil, err
	}
	return parseGitConfig(data)
}

func parseGitConfig(data []byte) ([][2]string, error) {
	var out [][2]string
	section := ""
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return out, errors.New("a section header without ]")
			}
			head := line[1:end]
			name, sub, hasSub := strings.Cut(head, " ")
			section = strings.ToLower(name)
			if hasSub {
				section += "." + strings.Trim(strings.TrimSpace(sub), `"`)
			}
			if line = strings.TrimSpace(line[end+1:]); line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
		}
		key, raw, hasValue := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if !hasValue {
			out = append(out, [2]string{section + "." + key, "true"})
			continue
		}
		value, more := gitConfigValue(raw)
		for more && i+1 < len(lines) {
			i++
			var next string
			next, more = gitConfigValue(lines[i])
			value += " " + next // the blanks around a line break part words
		}
		out = append(out, [2]string{section + "." + key, value})
	}
	return out, nil
}

// gitConfigValue reads one line of a value: quotes removed, escapes
// applied, a comment cut; more says the line ends in a backslash and the
// value goes on.
func gitConfigValue(s string) (value string, more bool) {
	var b strings.Builder
	quoted := false
	s = strings.TrimLeft(s, " \t")
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 == len(s):
			return strings.TrimRight(b.String(), " \t"), true
		case c == '\\':
			i++
			if e, ok := map[byte]byte{'n': '\n', 't': '\t', 'b': '\b'}[s[i]]; ok {
				b.WriteByte(e)
			} else {
				b.WriteByte(s[i])
			}
		case c == '"':
			quoted = !quoted
		case !quoted && (c == '#' || c == ';'):
			return strings.TrimRight(b.String(), " \t"), false
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimRight(b.String(), " \t"), false
}

// gitHashLen is the length of an object name in the repository whose
// config is at path: 32 bytes with extensions.objectFormat = sha256, else
// 20.
func gitHashLen(config string) int {
	entries, _ := readGitConfig(config)
	for _, e := range entries {
		if e[0] == "extensions.objectformat" && strings.EqualFold(e[1], "sha256") {
			return 32
		}
	}
	return 20
}

// indexGitlinks lists the paths (slash-separated, relative to the work
// tree) of the submodules a git index records: its entries of mode
// 160000. It reads index versions 2 to 4.
func indexGitlinks(data []byte, hashLen int) ([]string, error) {
	bad := errors.New("not a git index zot can read")
	if len(data) < 12 || !bytes.Equal(data[:4], []byte("DIRC")) {
		return nil, bad
	}
	version := binary.BigEndian.Uint32(data[4:8])
	count := binary.BigEndian.Uint32(data[8:12])
	if version < 2 || version > 4 {
		return nil, bad
	}
	var out []string
	var prev []byte
	pos := 12
	for n := uint32(0); n < count; n++ {
		start := pos
		fixed := 40 + hashLen + 2
		if pos+fixed > len(data) {
			return out, bad
		}
		mode := binary.BigEndian.Uint32(data[pos+24 : pos+28])
		flags := binary.BigEndian.Uint16(data[pos+40+hashLen : pos+fixed])
		pos += fixed
		if flags&0x4000 != 0 && version >= 3 {
			pos += 2 // extended flags
			if pos > len(data) {
				return out, bad
			}
		}
		var name []byte
		if version == 4 {
			strip, used := gitVarint(data[pos:])
			if used == 0 || strip > uint64(len(prev)) {
				return out, bad
			}
			pos += used
			end := bytes.IndexByte(data[pos:], 0)
			if end < 0 {
				return out, bad
			}
			name = append(append([]byte(nil), prev[:len(prev)-int(strip)]...), data[pos:pos+end]...)
			pos += end + 1
		} else {
			end := bytes.IndexByte(data[pos:], 0)
			if end < 0 {
				return out, bad
			}
			name = data[pos : pos+end]
			// Entries are padded with NULs to a multiple of 8 bytes.
			pos = start + (pos+end-start+8)&^7
		}
		prev = name
		if mode&0o170000 == 0o160000 {
			out = append(out, string(name))
		}
	}
	return out, nil
}

// gitVarint reads the offset encoding of index version 4; used is 0 when
// it does not end within b.
func gitVarint(b []byte) (v uint64, used int) {
	for i, c := range b {
		if i == 0 {
			v = uint64(c & 0x7f)
		} else {
			v = (v+1)<<7 | uint64(c&0x7f)
		}
		if c&0x80 == 0 {
			return v, i + 1
		}
		if i > 8 {
			break
		}
	}
	return 0, 0
}

// validGitHead says whether data is a HEAD git accepts, as git's
// validate_headref judges it: "ref:", blanks, then a ref under refs/; or
// an object name of hashLen bytes in hex, whatever follows it.
func validGitHead(data []byte, hashLen int) bool {
	if ref, ok := bytes.CutPrefix(data, []byte("ref:")); ok {
		return bytes.HasPrefix(bytes.TrimLeft(ref, " \t\n\r\v\f"), []byte("refs/"))
	}
	if len(data) < 2*hashLen {
		return false
	}
	for _, c := range data[:2*hashLen] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
