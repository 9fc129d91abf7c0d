package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// gitRepo makes a repository in dir with files committed and, for each
// name in links, a submodule recorded in the index (a gitlink) whose
// repository is checked out at that path.
func gitRepo(t testing.TB, dir string, files int, links ...string) {
	t.Helper()
	gitIn(t, dir, "init", "-q")
	gitIn(t, dir, "config", "gc.auto", "0") // no gc left running in the background
	for i := range files {
		p := filepath.Join(dir, "src", strconv.Itoa(i%50), strconv.Itoa(i)+".txt")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(strconv.Itoa(i)), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "README"), []byte("x\n"), 0o644)
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-qm", "first")
	for _, l := range links {
		sub := filepath.Join(dir, l)
		os.MkdirAll(sub, 0o755)
		gitIn(t, sub, "init", "-q")
		gitIn(t, sub, "commit", "-q", "--allow-empty", "-m", "x")
		head := strings.TrimSpace(gitIn(t, sub, "rev-parse", "HEAD"))
		gitIn(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+head+","+l)
	}
}

// The index reader finds exactly the submodules git records, in index
// versions 2, 3 and 4 (whose paths are prefix-compressed).
func TestIndexGitlinksReadsEveryVersion(t *testing.T) {
	t.Parallel()
	needGit(t)
	dir := t.TempDir()
	gitRepo(t, dir, 30, "vendor/a", "vendor/b", "z")
	for _, v := range []string{"2", "3", "4"} {
		gitIn(t, dir, "update-index", "--index-version", v)
		if v == "3" {
			// An entry with the extended flags: intent to add.
			os.WriteFile(filepath.Join(dir, "later.txt"), []byte("x"), 0o644)
			gitIn(t, dir, "add", "-N", "later.txt")
		}
		data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		links, err := indexGitlinks(data, 20)
		if err != nil || !slices.Equal(links, []string{"vendor/a", "vendor/b", "z"}) {
			t.Errorf("version %s: %v %v", v, links, err)
		}
	}
	// A sandboxed command writes the index the guard reads after it: an
	// entry whose extended flags would lie past the end crashed zot.
	cut := []byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x01" + strings.Repeat("0", 60) + "\x40\x00")
	for _, bad := range [][]byte{nil, []byte("DIRC"), []byte("DIRC\x00\x00\x00\x09\x00\x00\x00\x01"), []byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x05xxxx"), cut} {
		if _, err := indexGitlinks(bad, 20); err == nil {
			t.Errorf("%q read as an index", bad)
		}
	}
}

// What a config names inside the work tree is guarded: includes,
// core.hooksPath, and a script a value names (quoted, after !, with
// arguments); words that name no file are not.
func TestGitConfigNamesWhatItRuns(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, f := range []string{"tools/watch.sh", "tools/clean.sh", "scripts/alias.sh", "extra.cfg"} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755)
		os.WriteFile(filepath.Join(root, f), []byte("x"), 0o755)
	}
	os.MkdirAll(filepath.Join(root, ".git"), 0o755)
	cfg := filepath.Join(root, ".git", "config")
	os.WriteFile(cfg, []byte(`[core]
	fsmonitor = tools/watch.sh ; a comment
	hooksPath = .husky
[filter "x"]
	clean = "./tools/clean.sh --fast"
[alias]
	go = !sh scripts/alias.sh \
		--more
	st = status
[include]
	path = ../extra.cfg
`), 0o644)
	var got []string
	for _, gp := range gitConfigGuarded(cfg, root, "") {
		rel, _ := filepath.Rel(root, gp.Path)
		got = append(got, rel)
	}
	slices.Sort(got)
	if want := []string{".husky", "extra.cfg", "scripts/alias.sh", "tools/clean.sh", "tools/watch.sh"}; !slices.Equal(got, want) {
		t.Errorf("guarded %v, want %v", got, want)
	}
}

// HEAD is judged as git judges it: what git takes for a HEAD is left
// alone, what it does not is put back.
func TestValidGitHead(t *testing.T) {
	t.Parallel()
	for head, ok := range map[string]bool{
		"ref: refs/heads/main\n":              true,
		"ref:refs/heads/main":                 true,
		"ref: refs/heads/main\r\n":            true,
		strings.Repeat("a", 40) + "\n":        true,
		strings.Repeat("A", 40) + " anything": true,
		"junk\n":                              false,
		"ref: HEAD\n":                         false,
		strings.Repeat("g", 40):               false,
		strings.Repeat("a", 39):               false,
		"":                                    false,
		"\n" + strings.Repeat("a", 40):        false,
	} {
		if validGitHead([]byte(head), 20) != ok {
			t.Errorf("%q: want %v", head, ok)
		}
	}
	if validGitHead([]byte(strings.Repeat("a", 40)), 32) {
		t.Error("a SHA-1 name is a SHA-256 repository's HEAD")
	}
}

// A rebase's todo is git's to change while it rebases; only an exec line
// that was not there before is the command's plant.
func TestRebaseTodoGainsNoExec(t *testing.T) {
	t.Parallel()
	todo := func(s string) guardEntry { return guardEntry{typ: 'f', whole: true, data: []byte(s)} }
	picks := "pick 1 a\npick 2 b\n# exec would be a comment\n"
	for _, c := range []struct {
		was, now guardEntry
		added    bool
	}{
		{todo(picks), todo("pick 2 b\n"), false},
		{todo("pick 1 a\nexec make test\n"), todo("exec make test\n"), false},
		{todo(picks), todo(picks + "exec touch x\n"), true},
		{todo(picks), todo(picks + "  x\ttouch x\n"), true},
		{guardEntry{}, todo("break\nexec touch x\n"), true},
		{todo("exec make test\n"), todo("exec make  test\n"), true},
	} {
		added, ok := rebaseExecsAdded(c.was, c.now)
		if !ok || added != c.added {
			t.Errorf("%q then %q: added %v (ok %v), want %v", c.was.data, c.now.data, added, ok, c.added)
		}
	}
	if _, ok := rebaseExecsAdded(todo(picks), guardEntry{typ: 'f', size: 2 << 20}); ok {
		t.Error("a todo too large to read counts as unchanged")
	}
}

func FuzzIndexGitlinks(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x00"))
	f.Add([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x01" + strings.Repeat("\x00", 62) + "\x00a\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, n := range []int{20, 32} {
			indexGitlinks(data, n)
		}
	})
}

func FuzzParseGitConfig(f *testing.F) {
	f.Add([]byte("[core]\n\tfsmonitor = \"x \\\" y\" ; c\n[a \"b\"]\nk\n"))
	f.Add([]byte("[x]\nv = a\\\n b\\"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parseGitConfig(data)
	})
}
