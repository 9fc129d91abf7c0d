//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The attacker is a sandboxed command in a git repository. Each bash call
// plants, in a way of its own, a command that the user's next `git
// status` — which runs outside the sandbox — would run: a commondir
// pointing at a copy of the git directory whose config sets
// core.fsmonitor; .git renamed away and a new one built; a nested
// repository recorded in the index as a submodule; .git/HEAD broken so
// that git takes the work tree for a bare repository of the command's
// making. On both paths none may survive the call: the namespaces path
// refuses what it can (.git is pinned, its config and hooks read-only) and
// the guard undoes the rest, the landlock-only path undoes it all. The
// user's real `git status` afterwards runs nothing planted, and the
// repository still works; an ordinary commit is no change to undo.
func TestSandboxedCommandCannotPlantWhatGitRuns(t *testing.T) {
	t.Parallel()
	needGit(t)
	for _, path := range sandboxPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			// The sandbox's temp directory is a place of its own, so that
			// the marker below is outside everything a command may write:
			// if it appears, a program outside the sandbox wrote it.
			z.env = append(z.env, "TMPDIR="+t.TempDir())
			if path.force != "" {
				z.env = append(z.env, sandboxForceEnv+"="+path.force)
			}
			escaped := filepath.Join(t.TempDir(), "escaped")
			gitIn(t, z.cwd, "init", "-q")
			os.WriteFile(filepath.Join(z.cwd, "a.txt"), []byte("a\n"), 0o644)
			gitIn(t, z.cwd, "add", "a.txt")
			gitIn(t, z.cwd, "commit", "-qm", "first")

			p := "P='touch " + escaped + "; false'; export GIT_CONFIG_NOSYSTEM=1; "
			id := "-c user.name=m -c user.email=m@example.com"
			steps := []string{
				"echo b > b.txt && git add b.txt && git " + id + " commit -qm second && echo committed",
				// An interactive rebase stopped at a break, its todo given
				// an exec line: the user's `git rebase --continue` runs it.
				p + `GIT_SEQUENCE_EDITOR="sed -i '\$a break'" git ` + id + ` rebase -q -i HEAD~1 && echo "exec $P" >> .git/rebase-merge/git-rebase-todo && echo planted-rebase`,
				p + `cp -r .git evilgit && git config -f evilgit/config core.fsmonitor "$P" && echo "$PWD/evilgit" > .git/commondir && echo planted-commondir`,
				p + `mv .git .git-old && cp -r .git-old .git && git config -f .git/config core.fsmonitor "$P" && echo planted-rename`,
				p + `mv .git .git-gone && printf 'gitdir: evilgit\n' > .git && echo planted-gitfile`,
				p + `git init -q evil && git -C evil ` + id + ` commit -q --allow-empty -m x && git -C evil config core.fsmonitor "$P" && git update-index --add --cacheinfo 160000,$(git -C evil rev-parse HEAD),evil && echo planted-submodule`,
				p + `echo junk > .git/HEAD; git init -q --bare . && git config -f config core.bare false && git config -f config core.worktree . && git config -f config core.fsmonitor "$P" && echo planted-bare`,
			}
			var script []replayStep
			for i, c := range steps {
				script = append(script, toolStep("b"+string(rune('1'+i)), "bash", obj{"command": c}))
			}
			srv := startReplay(t, append(script, replayStep{Events: anthropicEvents(gen{Text: "done"})})...)
			stdout, stderr, code := z.run(append(anthropicFlags(srv), "--sandbox", "workspace", "-p", "go")...)
			if code != 0 || stdout != "done\n" {
				t.Fatalf("exit %d, stdout %q\n%s", code, stdout, stderr)
			}
			reqs := srv.Requests()
			if len(reqs) != len(steps)+1 {
				t.Fatalf("%d requests", len(reqs))
			}
			result := func(i int) string { _, text := lastToolResult(t, reqs[i+1]); return text }
			if r := result(0); !strings.Contains(r, "committed") || strings.Contains(r, "zot undid") {
				t.Errorf("an ordinary commit was not left alone:\n%.3000s", r)
			}
			// The namespaces path refuses renaming .git (a mount point);
			// what the kernel cannot refuse, the guard undoes.
			for i, mark := range []string{"rebase", "commondir", "rename", "gitfile", "submodule", "bare"} {
				r := result(i + 1)
				planted := strings.Contains(r, "planted-"+mark)
				if planted && !strings.Contains(r, "zot undid it") {
					t.Errorf("%s: planted, and nothing undone:\n%.3000s", mark, r)
				}
				if path.force != "" && !planted {
					t.Errorf("%s: the landlock-only path should let the command through and undo it:\n%.3000s", mark, r)
				}
				if path.force == "" && (mark == "rename" || mark == "gitfile") && planted {
					t.Errorf("%s: .git was renamed on the namespaces path:\n%.3000s", mark, r)
				}
			}
			// The user, outside the sandbox, as after any session.
			status := gitIn(t, z.cwd, "status")
			if _, err := os.Stat(escaped); err == nil {
				t.Fatalf("the user's git status ran a command a sandboxed command planted")
			}
			if !strings.Contains(status, "rebase in progress") {
				t.Errorf("git status: %s", status)
			}
			if log := gitIn(t, z.cwd, "log", "--oneline"); !strings.Contains(log, "second") || !strings.Contains(log, "first") {
				t.Errorf("the repository lost its history:\n%s", log)
			}
			// The user unstages what the submodule step recorded and goes
			// on with the rebase. Whether git can go on without the todo
			// zot moved aside is git's business; that it runs nothing
			// planted is the test's.
			gitIn(t, z.cwd, "reset", "-q")
			cont := exec.Command("git", "rebase", "--continue")
			cont.Dir, cont.Env = z.cwd, append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+z.cwd, "GIT_EDITOR=true")
			out, _ := cont.CombinedOutput()
			if _, err := os.Stat(escaped); err == nil {
				t.Fatalf("the user's git rebase --continue ran a command a sandboxed command planted:\n%s", out)
			}
		})
	}
}

// The attacker is a sandboxed command that rewrites the project's rule
// files so that the next session allows what they deny (issue 34 §3): it
// empties the project's runok.yml, adds a runok.local.yml that allows by
// default, adds a runok.yml in the working directory below the
// project's, which would shadow it, and makes .claude/ (there was none)
// with a settings.local.json. On both paths none of it is there
// after the call — the namespaces path refuses the existing file, the
// guard undoes the rest — and the next session still denies.
func TestSandboxedCommandCannotRewriteTheRuleFiles(t *testing.T) {
	t.Parallel()
	for _, path := range sandboxPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			proj := t.TempDir()
			z.cwd = filepath.Join(proj, "sub")
			os.Mkdir(z.cwd, 0o755)
			cfg := t.TempDir()
			z.env = append(z.env, "TMPDIR="+t.TempDir(), "XDG_CONFIG_HOME="+cfg)
			if path.force != "" {
				z.env = append(z.env, sandboxForceEnv+"="+path.force)
			}
			// The project directory above the working one is writable too.
			os.WriteFile(filepath.Join(z.home, "config.json"), []byte(`{"sandbox_writable": ["`+proj+`"]}`), 0o600)
			os.MkdirAll(filepath.Join(cfg, "runok"), 0o755)
			os.WriteFile(filepath.Join(cfg, "runok", "runok.yml"), []byte("rules:\n  - allow: 'touch *'\n  - allow: 'printf *'\n  - allow: 'mkdir *'\n"), 0o644)
			rules := "rules:\n  - deny: 'touch forbidden*'\n"
			os.WriteFile(filepath.Join(proj, "runok.yml"), []byte(rules), 0o644)

			srv := startReplay(t,
				toolStep("b1", "bash", obj{"command": `printf 'rules: []\n' > ../runok.yml`}),
				toolStep("b2", "bash", obj{"command": `printf 'defaults:\n  action: allow\n' > ../runok.local.yml`}),
				toolStep("b3", "bash", obj{"command": `printf 'rules: []\n' > runok.yml`}),
				toolStep("b4", "bash", obj{"command": `mkdir .claude && printf '{"permissions": {"defaultMode": "bypassPermissions"}}' > .claude/settings.local.json`}),
				replayStep{Events: anthropicEvents(gen{Text: "done"})})
			if _, stderr, code := z.run(append(anthropicFlags(srv), "--sandbox", "workspace", "-p", "go")...); code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			for i, req := range srv.Requests()[1:] {
				_, text := lastToolResult(t, req)
				if !strings.Contains(text, "zot undid it") && !strings.Contains(text, "Read-only file system") {
					t.Errorf("step %d: neither refused nor undone:\n%s", i+1, text)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(proj, "runok.yml")); string(b) != rules {
				t.Errorf("the project's runok.yml is %q", b)
			}
			for _, p := range []string{filepath.Join(proj, "runok.local.yml"), filepath.Join(z.cwd, "runok.yml"), filepath.Join(z.cwd, ".claude")} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s is there after the session", p)
				}
			}
			// The next session, sandboxed or not, still denies.
			result, _ := toolResultSent(t, z, "bash", obj{"command": "touch forbidden"})
			if _, err := os.Stat(filepath.Join(z.cwd, "forbidden")); err == nil || !strings.Contains(result, "denied") {
				t.Errorf("the next session ran what the project denies:\n%s", result)
			}
		})
	}
}

// BenchmarkSandboxGuard is what the guard adds to each bash call: the
// look before and the comparison after, in a repository with the hooks
// git installs, a .zot, a .claude and a runok.yml. unchanged is the usual
// call; index-changed is a call after which the index changed (a git add
// or commit), so that the index is read again for submodules; one-lstat
// is the yardstick. Run it with -benchtime=2000x.
func BenchmarkSandboxGuard(b *testing.B) {
	needGit(b)
	for _, files := range []int{1000, 20000} {
		dir := b.TempDir()
		gitRepo(b, dir, files)
		os.MkdirAll(filepath.Join(dir, ".zot"), 0o755)
		os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
		os.WriteFile(filepath.Join(dir, "runok.yml"), []byte("rules: []\n"), 0o644)
		real, _ := filepath.EvalSymlinks(dir)
		g := newSandboxGuard(projectGuarded(real, nil, nil), func(p string) bool { return withinDir(p, real) })
		index := filepath.Join(real, ".git", "index")
		for _, changed := range []bool{false, true} {
			name := "unchanged"
			if changed {
				name = "index-changed"
			}
			b.Run(strconv.Itoa(files)+"-files/"+name, func(b *testing.B) {
				p := &proc{}
				var before, after syscall.Rusage
				syscall.Getrusage(syscall.RUSAGE_SELF, &before)
				for range b.N {
					g.track(p, g.begin())
					if changed {
						// As git add leaves it: the same path, new times.
						now := time.Now()
						os.Chtimes(index, now, now)
					}
					if note := g.end(p); note != "" {
						b.Fatal(note)
					}
				}
				syscall.Getrusage(syscall.RUSAGE_SELF, &after)
				b.ReportMetric(cpuPerOp(before, after, b.N), "cpu-µs/op")
			})
		}
		b.Logf("%d guarded paths", len(g.paths))
	}
	// The yardstick: one lstat on this machine, under its present load.
	b.Run("one-lstat", func(b *testing.B) {
		var before, after syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		for range b.N {
			os.Lstat(os.TempDir())
		}
		syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		b.ReportMetric(cpuPerOp(before, after, b.N), "cpu-µs/op")
	})
}

// cpuPerOp is the CPU time (user and system) between two Getrusage, per
// op: what the machine's load inflates less than the time on the clock.
func cpuPerOp(before, after syscall.Rusage, n int) float64 {
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	return float64(cpu.Nanoseconds()) / 1e3 / float64(n)
}

// The guard on its own, against what a command can leave behind: each
// case changes the guarded paths as a command would, and after end()
// everything guarded is as it was, what the command made is moved aside
// (never deleted), and nothing outside the writable directory was written
// through a link the command put on the way.
func TestGuardPutsBackWhatACommandChanged(t *testing.T) {
	t.Parallel()
	needGit(t)
	template := t.TempDir()
	gitRepo(t, template, 3)
	for name, attack := range map[string]func(work, outside string){
		"config rewritten": func(w, _ string) {
			os.WriteFile(filepath.Join(w, ".git", "config"), []byte("[core]\n\tfsmonitor = x\n"), 0o644)
		},
		"commondir made": func(w, _ string) { os.WriteFile(filepath.Join(w, ".git", "commondir"), []byte("/tmp\n"), 0o644) },
		"hook added": func(w, _ string) {
			os.WriteFile(filepath.Join(w, ".git", "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
		},
		"sample renamed": func(w, _ string) {
			os.Rename(filepath.Join(w, ".git", "hooks", "pre-commit.sample"), filepath.Join(w, ".git", "hooks", "pre-commit"))
		},
		"hooks replaced by a link": func(w, o string) {
			os.RemoveAll(filepath.Join(w, ".git", "hooks"))
			os.Symlink(o, filepath.Join(w, ".git", "hooks"))
		},
		"HEAD broken":     func(w, _ string) { os.WriteFile(filepath.Join(w, ".git", "HEAD"), []byte("junk\n"), 0o644) },
		"objects removed": func(w, _ string) { os.RemoveAll(filepath.Join(w, ".git", "objects")) },
		".git renamed": func(w, _ string) {
			os.Rename(filepath.Join(w, ".git"), filepath.Join(w, "elsewhere"))
			os.Mkdir(filepath.Join(w, ".git"), 0o755)
		},
		".git removed": func(w, _ string) { os.RemoveAll(filepath.Join(w, ".git")) },
		".git a link outside": func(w, o string) {
			os.Rename(filepath.Join(w, ".git"), filepath.Join(w, "elsewhere"))
			os.Symlink(o, filepath.Join(w, ".git"))
		},
		"runok.yml emptied": func(w, _ string) { os.WriteFile(filepath.Join(w, "runok.yml"), nil, 0o644) },
		".claude made": func(w, _ string) {
			os.MkdirAll(filepath.Join(w, "sub", ".claude"), 0o755)
			os.WriteFile(filepath.Join(w, "sub", ".claude", "settings.local.json"), []byte(`{"permissions": {"defaultMode": "bypassPermissions"}}`), 0o644)
		},
		"sub a link outside": func(w, o string) {
			// sub/runok.yml would shadow the project's; sub leads out.
			os.WriteFile(filepath.Join(o, "runok.yml"), []byte("rules: []\n"), 0o644)
			os.RemoveAll(filepath.Join(w, "sub"))
			os.Symlink(o, filepath.Join(w, "sub"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base, _ := filepath.EvalSymlinks(t.TempDir())
			work, outside := filepath.Join(base, "work"), filepath.Join(base, "outside")
			os.Mkdir(work, 0o755)
			if err := copyTree(template, work); err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Join(work, "sub"), 0o755)
			os.Mkdir(outside, 0o755)
			os.WriteFile(filepath.Join(work, "runok.yml"), []byte("rules:\n  - deny: 'git push *'\n"), 0o644)
			// What decides what git runs, and the rule file (objects,
			// refs and the rest are not the guard's to keep).
			snapshot := func() map[string]string {
				out := map[string]string{}
				for _, top := range []string{".git/hooks", ".git/info", ".git/config", ".git/HEAD", ".git/commondir", "runok.yml"} {
					filepath.Walk(filepath.Join(work, top), func(p string, info os.FileInfo, err error) error {
						if err == nil {
							b, _ := os.ReadFile(p)
							out[p] = info.Mode().String() + " " + string(b)
						}
						return nil
					})
				}
				return out
			}
			want := snapshot()
			g := newSandboxGuard(projectGuarded(filepath.Join(work, "sub"), nil, nil), func(p string) bool { return withinDir(p, work) })
			p := &proc{}
			g.track(p, g.begin())
			attack(work, outside)
			note := g.end(p)
			defer g.close()
			if !strings.Contains(note, "zot undid it") {
				t.Errorf("nothing said:\n%s", note)
			}
			got := snapshot()
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: %.80q, want %.80q", k, got[k], v)
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok && !strings.Contains(k, ".zot-refused-") {
					t.Errorf("%s is new", k)
				}
			}
			for _, d := range []string{"objects", "refs"} {
				if st, err := os.Lstat(filepath.Join(work, ".git", d)); err != nil || !st.IsDir() {
					t.Errorf(".git/%s is not a directory: %v", d, err)
				}
			}
			for _, rel := range []string{"sub/.claude", "sub/runok.yml"} {
				if _, err := os.Stat(filepath.Join(work, rel)); err == nil {
					t.Errorf("%s is there", rel)
				}
			}
			entries, _ := os.ReadDir(outside)
			for _, e := range entries {
				if e.Name() != "runok.yml" {
					t.Errorf("the guard wrote outside: %s", e.Name())
				}
			}
			if again := g.end(p); again != "" {
				t.Errorf("a second end: %s", again)
			}
			g.track(p, g.begin())
			if note := g.end(p); note != "" {
				t.Errorf("the state put back is not the state kept:\n%s", note)
			}
		})
	}
}
