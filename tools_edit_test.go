package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// editIn runs the edit tool on path (relative to dir) with one edit.
func editIn(t *testing.T, dir, path, oldText, newText string) ToolResult {
	t.Helper()
	return call(t, editTool{NewToolEnv(dir, false)}, map[string]any{"path": path, "edits": []map[string]string{{"oldText": oldText, "newText": newText}}})
}

func ownerOf(t *testing.T, path string) (uid, gid int, mode os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid), info.Mode()
}

const nobody = 65534

// Root replacing another user's setuid program must not turn it into a
// setuid-root program: the replacement keeps the owner and group.
func TestReplaceAsRootKeepsOwnerOfSetuidFile(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root can give a file to another user")
	}
	dir := t.TempDir()
	for _, tool := range []string{"edit", "write"} {
		path := filepath.Join(dir, tool+".sh")
		writeFile(t, path, "#!/bin/sh\necho old\n", 0o755)
		if err := os.Chown(path, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o755|os.ModeSetuid|os.ModeSetgid); err != nil {
			t.Fatal(err)
		}
		var r ToolResult
		if tool == "edit" {
			r = editIn(t, dir, tool+".sh", "old", "new")
		} else {
			r = call(t, writeTool{NewToolEnv(dir, false)}, map[string]any{"path": tool + ".sh", "content": "#!/bin/sh\necho new\n"})
		}
		mustOK(t, r)
		uid, gid, mode := ownerOf(t, path)
		if uid != nobody || gid != nobody {
			t.Errorf("%s: owner %d:%d after the replacement, want %d:%d", tool, uid, gid, nobody, nobody)
		}
		if want := 0o755 | os.ModeSetuid | os.ModeSetgid; mode != want {
			t.Errorf("%s: mode %v, want %v", tool, mode, want)
		}
		if got := fileContent(t, path); got != "#!/bin/sh\necho new\n" {
			t.Errorf("%s: content %q", tool, got)
		}
	}
	assertNoTempFiles(t, dir)
}

// A writer who may not keep the owner (anyone but root) must not leave a
// setuid or setgid program of its own: the bits go, as with cp and install.
func TestReplaceDropsSetIDBitsWhenOwnerCannotBeKept(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: to set up a setuid file of another user and run the edit as a third")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "prog")
	writeFile(t, path, "#!/bin/sh\necho old\n", 0o755)
	if err := os.Chown(path, 1234, 1234); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o755|os.ModeSetuid|os.ModeSetgid)
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	runTestAsNobody(t, "TestEditAsNobodyChild", "ZOT_EDIT_DIR="+dir)
	uid, gid, mode := ownerOf(t, path)
	if uid != nobody || gid != nobody {
		t.Fatalf("owner %d:%d; the child did not replace the file", uid, gid)
	}
	if mode != 0o755 {
		t.Errorf("mode %v after a replacement that could not keep the owner, want -rwxr-xr-x", mode)
	}
	if got := fileContent(t, path); got != "#!/bin/sh\necho new\n" {
		t.Errorf("content %q", got)
	}
}

// TestEditAsNobodyChild is the edit TestReplaceDropsSetIDBitsWhenOwnerCannotBeKept
// runs as another user.
func TestEditAsNobodyChild(t *testing.T) {
	dir := os.Getenv("ZOT_EDIT_DIR")
	if dir == "" {
		t.Skip("run by TestReplaceDropsSetIDBitsWhenOwnerCannotBeKept")
	}
	mustOK(t, editIn(t, dir, "prog", "old", "new"))
}

// runTestAsNobody runs one test of this test binary in a child process as
// user nobody (the caller checks it is root). The binary is copied where
// nobody can run it: go test builds it in a private directory.
func runTestAsNobody(t *testing.T, test string, env ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "zot.test")
	os.Chmod(filepath.Dir(bin), 0o755)
	os.Chmod(filepath.Dir(filepath.Dir(bin)), 0o755)
	copyExecutable(t, self, bin)
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.v")
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), append(env, "ZOT_TEST_CHILD=1")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+test) {
		t.Fatalf("%s as nobody: %v\n%s", test, err, out)
	}
	return string(out)
}

// copyExecutable puts the executable from at to, for a run as another
// user: a hard link, or, across file systems, a copy that cp writes. A
// copy written here would be written through a descriptor that a parallel
// test's fork may inherit until its exec, and running to while that child
// holds it open fails with "text file busy" (it did, under load); cp's
// descriptor is in cp alone.
func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	if os.Link(from, to) == nil {
		return
	}
	if out, err := exec.Command("cp", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp %s %s: %v\n%s", from, to, err, out)
	}
	if err := os.Chmod(to, 0o755); err != nil {
		t.Fatal(err)
	}
}

// The rename of an atomic write would split a hard link (the other name
// keeping the old text): both tools refuse and change nothing.
func TestReplaceRefusesAHardLinkedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, other := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	writeFile(t, path, "old text\n", 0o644)
	if err := os.Link(path, other); err != nil {
		t.Fatal(err)
	}
	mustFail(t, editIn(t, dir, "a.txt", "old", "new"), "edit a.txt", "2 hard links", "cat > FILE", "unchanged")
	mustFail(t, call(t, writeTool{NewToolEnv(dir, false)}, map[string]any{"path": "a.txt", "content": "new"}), "write a.txt", "2 hard links")
	for _, p := range []string{path, other} {
		if got := fileContent(t, p); got != "old text\n" {
			t.Errorf("%s holds %q", p, got)
		}
	}
	a, _ := os.Stat(path)
	b, _ := os.Stat(other)
	if !os.SameFile(a, b) {
		t.Error("the link was split")
	}
	assertNoTempFiles(t, dir)
}

// An oldText that matches more often than edit counts is reported as
// "more than N", never as a wrong count.
func TestEditCountsAmbiguousMatchesHonestly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		n    int
		want string
	}{
		{2, "found 2 times"},
		{1000, "found 1000 times"},
		{1000 + 1, "found more than 1000 times"},
		{10_000_000, "found more than 1000 times"},
	} {
		writeFile(t, filepath.Join(dir, "a.txt"), strings.Repeat("A", c.n), 0o644)
		got := mustFail(t, editIn(t, dir, "a.txt", "A", "B"), c.want, "at lines 1, 1")
		if c.n > 1000 && !strings.Contains(got, "more than") {
			t.Errorf("%d matches: %s", c.n, got)
		}
		if len(got) > 2000 {
			t.Errorf("%d matches: a %d-byte error", c.n, len(got))
		}
	}
}

// A change inside a huge line must not put the line, twice, into the
// result (and from there into the session and every later request).
func TestEditResultIsCapped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "min.js")
	half := strings.Repeat("x", 5<<20)
	writeFile(t, path, half+"needle"+half, 0o644)

	got := mustOK(t, editIn(t, dir, "min.js", "needle", "pin"))
	if len(got) > editMaxDiff+1024 {
		t.Errorf("the result is %d bytes, above the %d cap", len(got), editMaxDiff)
	}
	for _, want := range []string{"Applied 1 edit to min.js.", "--- a/min.js", "-xxx", "was cut here; every edit was applied"} {
		if !strings.Contains(got, want) {
			t.Errorf("result does not hold %q:\n%.300s", want, got)
		}
	}
	if fileContent(t, path) != half+"pin"+half {
		t.Error("the edit was not applied in full")
	}

	got = mustFail(t, editIn(t, dir, "min.js", strings.Repeat("x", 300)+"Q", "x"), "was not found", "more bytes on this line")
	if len(got) > 4096 {
		t.Errorf("the not-found answer is %d bytes", len(got))
	}
}
