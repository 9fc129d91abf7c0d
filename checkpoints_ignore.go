package main

import (
	"os"
	"path"
	"path/filepath"
	"strings"
)

// What a snapshot leaves out, as git would: the patterns of .gitignore
// files (each directory's, and those above the covered directory up to
// its repository's top), .git/info/exclude and the user's global excludes
// file, below zot's own defaults for caches and the "exclude" patterns of
// config.json. The syntax is gitignore's: # comments, ! negation, a
// trailing / for directories only, a leading or middle / to anchor, *, ?,
// [...] and **. As in git, a file inside an excluded directory cannot be
// brought back by a negation: the walk never enters the directory.

// defaultCheckpointExcludes are caches and tools' state that no .gitignore
// may list but nobody wants restored: they are big, rebuilt at will, and
// rewinding them would confuse the tools that own them.
var defaultCheckpointExcludes = []string{
	".hg/", ".svn/", ".jj/", "node_modules/", "__pycache__/", ".venv/", ".tox/", ".nox/",
	".mypy_cache/", ".pytest_cache/", ".ruff_cache/", ".gradle/", ".next/", ".nuxt/",
	".parcel-cache/", ".turbo/", ".cache/", ".zig-cache/", "zig-cache/", ".terraform/",
}

// ignorePattern is one line of a gitignore file.
type ignorePattern struct {
	negate, dirOnly bool
	// anchored patterns (a slash before their end) match the whole path
	// below their file's directory, segment by segment; the others match
	// the name alone, at any depth.
	anchored bool
	segs     []string
	glob     string
}

// ignoreRules are the patterns of one file. A path given to them is the
// walk's relative path with base (the file's directory below the root)
// cut off and prefix (the root below the file's directory, for files
// above the root) put in front.
type ignoreRules struct {
	base, prefix string
	pats         []ignorePattern
}

// ignoreStack is the rules in force in one directory: its own on top of
// its parents'. override (config.json's) is consulted before all of them.
type ignoreStack struct {
	rules    *ignoreRules
	parent   *ignoreStack
	override *ignoreRules
}

func (s *ignoreStack) push(r *ignoreRules) *ignoreStack {
	if r == nil || len(r.pats) == 0 {
		return s
	}
	return &ignoreStack{rules: r, parent: s, override: s.override}
}

// ignored says whether rel (name is its last element) is left out: the
// last pattern that matches decides, deeper files before shallower ones.
func (s *ignoreStack) ignored(rel, name string, isDir bool) bool {
	if s == nil {
		return false
	}
	if decided, ignore := s.override.match(rel, name, isDir); decided {
		return ignore
	}
	for n := s; n != nil; n = n.parent {
		if decided, ignore := n.rules.match(rel, name, isDir); decided {
			return ignore
		}
	}
	return false
}

func (r *ignoreRules) match(rel, name string, isDir bool) (decided, ignore bool) {
	if r == nil {
		return false, false
	}
	local := ""
	for i := len(r.pats) - 1; i >= 0; i-- {
		p := &r.pats[i]
		if p.dirOnly && !isDir {
			continue
		}
		var ok bool
		if p.anchored {
			if local == "" {
				local = rel
				if r.base != "" {
					local = strings.TrimPrefix(rel, r.base+"/")
				}
				local = r.prefix + local
			}
			ok = matchSegments(p.segs, strings.Split(local, "/"))
		} else {
			ok = matchSegment(p.glob, name)
		}
		if ok {
			return true, !p.negate
		}
	}
	return false, false
}

// parseIgnore reads gitignore lines.
func parseIgnore(text, base, prefix string) *ignoreRules {
	r := &ignoreRules{base: base, prefix: prefix}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		// Trailing spaces go, unless escaped.
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
			line = line[:len(line)-1]
		}
		if line == "" || line[0] == '#' {
			continue
		}
		var p ignorePattern
		if line[0] == '!' {
			p.negate, line = true, line[1:]
		}
		if strings.HasSuffix(line, "/") {
			p.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		line = strings.ReplaceAll(line, "[!", "[^") // gitignore's negated class, in path.Match's syntax
		if strings.Contains(line, "/") {
			p.anchored = true
			p.segs = strings.Split(strings.TrimPrefix(line, "/"), "/")
		} else {
			p.glob = line
		}
		r.pats = append(r.pats, p)
	}
	return r
}

// matchSegments matches path segments against pattern segments, where
// "**" is any number of segments (at the end: at least one).
func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			if len(pat) == 1 {
				return len(segs) > 0
			}
			for i := 0; i <= len(segs); i++ {
				if matchSegments(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 || !matchSegment(pat[0], segs[0]) {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// matchSegment matches one name, with a fast path for the common shapes:
// a literal name and *.ext.
func matchSegment(glob, name string) bool {
	if !strings.ContainsAny(glob, `*?[\`) {
		return glob == name
	}
	if glob[0] == '*' && !strings.ContainsAny(glob[1:], `*?[\`) {
		return strings.HasSuffix(name, glob[1:])
	}
	ok, err := path.Match(glob, name)
	return err == nil && ok
}

// ignoreCache is a parsed gitignore file and the stat it was read at.
type ignoreCache struct {
	stat  ckFileStat
	rules *ignoreRules
}

// ignoreFile reads a gitignore file, again only when it changed.
func (c *Checkpoints) ignoreFile(file, base, prefix string) *ignoreRules {
	fi, err := os.Stat(file)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
		return nil
	}
	key := file + "\x00" + base + "\x00" + prefix
	st := ckStatOf(fi)
	if ic, ok := c.ignores[key]; ok && ic.stat == st {
		return ic.rules
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	r := parseIgnore(string(b), base, prefix)
	c.ignores[key] = &ignoreCache{stat: st, rules: r}
	return r
}

// rootIgnores are the rules in force at a root before its own .gitignore:
// zot's defaults, the user's global excludes, and, when the root lies in
// a git repository, .git/info/exclude and the .gitignore files from the
// repository's top down to the root's parent. config.json's patterns go
// over all of them.
func (c *Checkpoints) rootIgnores(root string) *ignoreStack {
	s := &ignoreStack{rules: parseIgnore(strings.Join(defaultCheckpointExcludes, "\n"), "", "")}
	if len(c.set.Exclude) > 0 {
		s.override = parseIgnore(strings.Join(c.set.Exclude, "\n"), "", "")
	}
	top := gitTop(root)
	prefixFor := func(dir string) string {
		if top == "" {
			return ""
		}
		rel, err := filepath.Rel(dir, root)
		if err != nil || rel == "." {
			return ""
		}
		return filepath.ToSlash(rel) + "/"
	}
	globalDir := top
	if globalDir == "" {
		globalDir = root
	}
	if f := globalGitExcludes(); f != "" {
		s = s.push(c.ignoreFile(f, "", prefixFor(globalDir)))
	}
	if top == "" {
		return s
	}
	s = s.push(c.ignoreFile(filepath.Join(top, ".git", "info", "exclude"), "", prefixFor(top)))
	var dirs []string
	for d := filepath.Dir(root); pathWithin(d, top) && d != root; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == top {
			break
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		s = s.push(c.ignoreFile(filepath.Join(dirs[i], ".gitignore"), "", prefixFor(dirs[i])))
	}
	return s
}

// gitTop is the top of the git repository dir lies in, or "".
func gitTop(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// globalGitExcludes is git's default core.excludesFile.
func globalGitExcludes() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "git", "ignore")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".config", "git", "ignore")
	}
	return ""
}
