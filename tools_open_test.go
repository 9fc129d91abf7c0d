package main

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// openLayout is a project (work) beside a directory outside it and a
// hidden one ($ZOT_HOME), with symlinks of every kind in the project.
func openLayout(t *testing.T) (work, outside, home string) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work, outside, home = filepath.Join(base, "work"), filepath.Join(base, "outside"), filepath.Join(base, "home")
	for _, d := range []string{work, outside, home, filepath.Join(work, "in")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(work, "in", "file"), []byte("inside\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret"), []byte("outside\n"), 0o644)
	os.WriteFile(filepath.Join(home, "auth.json"), []byte("key\n"), 0o600)
	links := map[string]string{
		"link-in":    "in/file",
		"link-out":   filepath.Join(outside, "secret"),
		"dir-link":   "../work/in",
		"dotdot":     "in/../in/file",
		"loop":       "loop",
		"to-home":    home,
		"dangling":   "in/created",
		"dangle-out": filepath.Join(outside, "created"),
		"hop":        "dir-link/../dir-link/file",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(work, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(work, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return work, outside, home
}

// Symlinks inside the project that stay inside it are followed; one that
// leads out of the root, or into a hidden directory, is refused — with the
// one-step open (openat2) and with the walk alike.
func TestOpenCheckedFollowsOnlyWhatTheRulesAllow(t *testing.T) {
	t.Parallel()
	work, _, home := openLayout(t)
	for _, fast := range []bool{true, false} {
		rules := func() *pathRules {
			r := &pathRules{root: work, hidden: []string{home}}
			if fast {
				r.fast = []string{work}
			}
			return r
		}
		for path, want := range map[string]string{
			"in/file":           "inside\n",
			"link-in":           "inside\n",
			"dir-link/file":     "inside\n",
			"dotdot":            "inside\n",
			"hop":               "inside\n",
			"link-out":          "error: outside",
			"to-home/auth.json": "error: do not enter",
			"loop":              "error: too many levels of symbolic links",
			"missing":           "error: not exist",
			"../outside/none":   "error: outside",
			"fifo":              "not regular",
		} {
			f, info, err := openChecked(absPath(work, path), path, rules())
			got := ""
			switch {
			case errors.Is(err, fs.ErrNotExist):
				got = "error: not exist"
			case err != nil:
				got = "error: " + err.Error()
			case f == nil:
				got = "not regular"
				if info.Mode()&fs.ModeNamedPipe == 0 {
					got += " (not a FIFO)"
				}
			default:
				b, _ := io.ReadAll(f)
				f.Close()
				got = string(b)
			}
			if got != want && !(strings.HasPrefix(want, "error: ") && strings.HasPrefix(got, "error: ") && strings.Contains(got, strings.TrimPrefix(want, "error: "))) {
				t.Errorf("fast=%v %s: got %q, want %q", fast, path, got, want)
			}
		}
	}
}

// A write follows a dangling symlink to create what it points to, makes
// missing parent directories, and is refused where the rules refuse it.
func TestOpenForWriteCreatesOnlyWhereAllowed(t *testing.T) {
	t.Parallel()
	work, outside, _ := openLayout(t)
	for path, want := range map[string]string{
		"new/sub/f":  filepath.Join(work, "new", "sub", "f"),
		"dangling":   filepath.Join(work, "in", "created"),
		"dangle-out": "",
		"link-out":   "",
	} {
		r := &pathRules{root: work, fast: []string{work}}
		w, err := openForWrite(absPath(work, path), path, r)
		if want == "" {
			if err == nil {
				w.Close()
				t.Errorf("%s: a write outside the root was allowed", path)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		err = w.Create([]byte("made"), 0o640)
		w.Close()
		if b, rerr := os.ReadFile(want); err != nil || rerr != nil || string(b) != "made" {
			t.Errorf("%s: %v, %v, %q at %s", path, err, rerr, b, want)
		}
		if st, _ := os.Stat(want); st == nil || st.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v", path, st)
		}
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("a write reached outside the root: %v", entries)
	}
	if matches, _ := filepath.Glob(filepath.Join(work, "*", ".*.zot-*.tmp")); len(matches) > 0 {
		t.Errorf("temp files left: %v", matches)
	}
}

// The cost of opening a file the checked way, with and without a symlink
// on the path (the slow walk), beside a plain open by name.
func BenchmarkOpenChecked(b *testing.B) {
	work := b.TempDir()
	os.MkdirAll(filepath.Join(work, "a", "b", "c"), 0o755)
	os.WriteFile(filepath.Join(work, "a", "b", "c", "f.go"), []byte("package x\n"), 0o644)
	os.Symlink("a", filepath.Join(work, "link"))
	env := NewToolEnv(work, true)
	b.Cleanup(func() { env.Close() })
	for _, c := range []struct{ name, path string }{{"direct", "a/b/c/f.go"}, {"through-symlink", "link/b/c/f.go"}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				f, _, err := env.openRead(context.Background(), c.path)
				if err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
	b.Run("os.Open", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			f, err := os.Open(filepath.Join(work, "a", "b", "c", "f.go"))
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}
