package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ignoreCase is a tree with gitignore files, for the differential test.
var ignoreFiles = map[string]string{
	".gitignore": strings.Join([]string{
		"# a comment", "*.log", "!important.log", "/root-only.txt", "build/", "doc/*.txt", "**/deep/*.md",
		"a/**/z", "foo[0-9].c", "[!x]y.c", `\#literal`, "trailing.txt   ", "sub/", "*.tmp", "!keep/*.tmp",
		"dir-only/", "star*/one.txt", "/anchored/", "mid/dle/file", "?.q",
	}, "\n"),
	"nested/.gitignore":       "!*.log\n/local.txt\n*.md\n",
	"nested/inner/.gitignore": "!readme.md\n",
	".git/info/exclude":       "excluded-by-info\n",
}

var ignorePaths = []string{
	"a.log", "important.log", "x/important.log", "root-only.txt", "x/root-only.txt", "build/out", "x/build/out",
	"doc/a.txt", "doc/sub/b.txt", "doc/a.md", "p/deep/x.md", "deep/x.md", "p/deep/q/x.md", "a/z", "a/b/c/z", "q/a/z",
	"foo1.c", "foo.c", "fooa.c", "ay.c", "xy.c", "#literal", "trailing.txt", "sub/f", "x/sub/f", "t.tmp", "keep/t.tmp",
	"keep/deeper/t.tmp", "dir-only", "x/dir-only/f", "star1/one.txt", "star/one.txt", "anchored/f", "x/anchored/f",
	"mid/dle/file", "x/mid/dle/file", "a.q", "ab.q", "nested/n.log", "nested/local.txt", "nested/x/local.txt",
	"nested/r.md", "nested/inner/readme.md", "nested/inner/other.md", "excluded-by-info", "x/excluded-by-info", "plain.go",
}

// TestIgnoreMatchesGit builds a repository with tricky gitignore patterns
// and compares what a snapshot leaves out with what git calls ignored.
func TestIgnoreMatchesGit(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		skipMissing(t, "no git")
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	for name, text := range ignoreFiles {
		mustWrite(t, filepath.Join(dir, name), text, 0o644)
	}
	for _, p := range ignorePaths {
		mustWrite(t, filepath.Join(dir, p), "x", 0o644)
	}
	ck := OpenCheckpoints(t.TempDir(), dir, nil, DefaultCheckpointSettings())
	ck.loadIndex()
	tree, note, err := ck.snapshotRoot(dir)
	if err != nil || note != "" {
		t.Fatal(err, note)
	}
	var ours []string
	for _, p := range ignorePaths {
		parts := strings.Split(p, "/")
		for i := range parts {
			e, found, err := ck.lookup(tree, strings.Join(parts[:i+1], "/"))
			if err != nil {
				t.Fatal(err)
			}
			if found && e.Kind == kindExcluded {
				ours = append(ours, p)
				break
			}
		}
	}
	// git with the global excludes file zot reads, and nothing else.
	cmd := exec.Command("git", "-C", dir, "-c", "core.excludesFile="+globalGitExcludes(), "ls-files", "-o", "-i", "--exclude-standard")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var theirs []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if slices.Contains(ignorePaths, l) {
			theirs = append(theirs, l)
		}
	}
	slices.Sort(ours)
	slices.Sort(theirs)
	if !slices.Equal(ours, theirs) {
		for _, p := range ignorePaths {
			if slices.Contains(ours, p) != slices.Contains(theirs, p) {
				t.Errorf("%s: zot leaves it out: %v, git ignores it: %v", p, slices.Contains(ours, p), slices.Contains(theirs, p))
			}
		}
	}
	if len(theirs) < 20 {
		t.Errorf("git ignores only %d paths: the patterns test little", len(theirs))
	}
}

// A project that is a directory inside a repository obeys the .gitignore
// files above it, anchored patterns included.
func TestIgnoreReadsTheRepositoryAboveTheProject(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	mustWrite(t, filepath.Join(top, ".git", "HEAD"), "ref: refs/heads/main\n", 0o644)
	mustWrite(t, filepath.Join(top, ".gitignore"), "/sub/only-here.txt\n*.o\n/top-only.txt\n", 0o644)
	mustWrite(t, filepath.Join(top, ".git", "info", "exclude"), "secret.env\n", 0o644)
	root := filepath.Join(top, "sub")
	for _, p := range []string{"only-here.txt", "x.o", "top-only.txt", "secret.env", "kept.txt", "deeper/only-here.txt"} {
		mustWrite(t, filepath.Join(root, p), "x", 0o644)
	}
	ck := OpenCheckpoints(t.TempDir(), root, nil, DefaultCheckpointSettings())
	ck.loadIndex()
	tree, _, err := ck.snapshotRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	for p, excluded := range map[string]bool{"only-here.txt": true, "x.o": true, "secret.env": true, "top-only.txt": false, "kept.txt": false, "deeper/only-here.txt": false} {
		e, found, err := ck.lookup(tree, p)
		if err != nil || !found {
			t.Fatalf("%s: %v %v", p, found, err)
		}
		if (e.Kind == kindExcluded) != excluded {
			t.Errorf("%s: excluded %v, want %v", p, e.Kind == kindExcluded, excluded)
		}
	}
}

// FuzzIgnoreFile: the attacker is a repository, which writes the ignore
// files checkpoints read. No file panics, and matching a path ends.
func FuzzIgnoreFile(f *testing.F) {
	for _, s := range []string{"*.log\n!keep.log\nbuild/\n/root-only\n**/deep/**\n\\#x\n", "a/**/b\n[a-z]*.tmp\n\\!x \\ \n", "**\n!**/\n*[\n"} {
		f.Add(s, "src/deep/x.log")
	}
	f.Fuzz(func(t *testing.T, text, rel string) {
		rules := parseIgnore(text, "/repo", "")
		for _, isDir := range []bool{false, true} {
			rules.match(rel, filepath.Base(rel), isDir)
		}
	})
}
