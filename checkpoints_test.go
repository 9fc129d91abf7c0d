package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// testCheckpoints is a store for a fresh project directory.
func testCheckpoints(t testing.TB) (*Checkpoints, string) {
	t.Helper()
	home, cwd := t.TempDir(), t.TempDir()
	return OpenCheckpoints(home, cwd, nil, DefaultCheckpointSettings()), cwd
}

// ckStep records a checkpoint around change, as the agent does around a
// tool call, and returns the checkpoint's id.
func ckStep(t testing.TB, ck *Checkpoints, session, prompt string, change func()) string {
	t.Helper()
	pt := time.Date(2026, 1, 1, 0, 0, len(prompt), 0, time.UTC)
	after, _, err := ck.Before(ckStepInfo{Session: session, Tool: "bash", CallID: "c", Prompt: prompt, PromptTime: pt})
	if err != nil {
		t.Fatal(err)
	}
	change()
	if err := after(); err != nil {
		t.Fatal(err)
	}
	recs, err := ck.sessionRecords(session)
	if err != nil || len(recs.Records) == 0 {
		t.Fatalf("no records: %v", err)
	}
	return recs.Records[len(recs.Records)-1].ID
}

// treeState is the files beneath dir (not .git), each as mode and content
// or link target, for comparing whole trees.
func treeState(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if fi.Name() == ".git" {
			return filepath.SkipDir
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link " + target
		case fi.IsDir():
			out[rel+"/"] = fmt.Sprintf("dir %o", fi.Mode().Perm())
		default:
			b, _ := os.ReadFile(p)
			out[rel] = fmt.Sprintf("%o %s", fi.Mode().Perm(), b)
		}
		return nil
	})
	return out
}

func mustWrite(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, mode)
}

// One call edits, creates, deletes, chmods, replaces a directory with a
// file and a file with a symlink; restoring its checkpoint brings the
// tree back exactly, and the restore is a checkpoint that undoes it.
func TestCheckpointRestoreBringsTheTreeBack(t *testing.T) {
	t.Parallel()
	ck, cwd := testCheckpoints(t)
	mustWrite(t, filepath.Join(cwd, "edit.txt"), "one\n", 0o644)
	mustWrite(t, filepath.Join(cwd, "gone.txt"), "bye\n", 0o600)
	mustWrite(t, filepath.Join(cwd, "run.sh"), "#!/bin/sh\n", 0o644)
	mustWrite(t, filepath.Join(cwd, "dir", "deep", "x.txt"), "x\n", 0o644)
	mustWrite(t, filepath.Join(cwd, "plain"), "plain\n", 0o644)
	os.Symlink("edit.txt", filepath.Join(cwd, "link"))
	os.Mkdir(filepath.Join(cwd, "empty"), 0o750)
	before := treeState(t, cwd)

	id := ckStep(t, ck, "s1", "change everything", func() {
		mustWrite(t, filepath.Join(cwd, "edit.txt"), "two\n", 0o644)
		os.Remove(filepath.Join(cwd, "gone.txt"))
		os.Chmod(filepath.Join(cwd, "run.sh"), 0o755)
		os.RemoveAll(filepath.Join(cwd, "dir"))
		mustWrite(t, filepath.Join(cwd, "dir"), "now a file", 0o644)
		os.Remove(filepath.Join(cwd, "plain"))
		os.Symlink("/etc/passwd", filepath.Join(cwd, "plain"))
		os.Remove(filepath.Join(cwd, "link"))
		mustWrite(t, filepath.Join(cwd, "link"), "not a link", 0o644)
		mustWrite(t, filepath.Join(cwd, "new", "made.txt"), "new\n", 0o644)
		os.Remove(filepath.Join(cwd, "empty"))
	})
	changed := treeState(t, cwd)
	res, err := ck.Restore(id, ckRestoreOptions{Session: "s1"})
	if err != nil {
		t.Fatalf("restore: %v %+v", err, res)
	}
	if got := treeState(t, cwd); !mapsEqual(got, before) {
		t.Fatalf("after restore:\n%v\nwant:\n%v", got, before)
	}
	if len(res.Errors) > 0 || res.Record == "" {
		t.Fatalf("result %+v", res)
	}
	// The restore was itself a checkpoint: restoring it brings back the
	// state it replaced.
	if _, err := ck.Restore(res.Record, ckRestoreOptions{Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	if got := treeState(t, cwd); !mapsEqual(got, changed) {
		t.Fatalf("after undoing the restore:\n%v\nwant:\n%v", got, changed)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A file changed after the checkpoint by someone else — between calls or
// after the last one, and even when a later call built on the change — is
// a conflict: nothing is restored without force.
func TestCheckpointRestoreRefusesOthersChanges(t *testing.T) {
	t.Parallel()
	ck, cwd := testCheckpoints(t)
	mustWrite(t, filepath.Join(cwd, "a.txt"), "a1", 0o644)
	mustWrite(t, filepath.Join(cwd, "b.txt"), "b1", 0o644)
	mustWrite(t, filepath.Join(cwd, "d.txt"), "d1", 0o644)
	first := ckStep(t, ck, "s1", "p1", func() { mustWrite(t, filepath.Join(cwd, "a.txt"), "a2", 0o644) })
	mustWrite(t, filepath.Join(cwd, "b.txt"), "b-user", 0o644) // between calls
	mustWrite(t, filepath.Join(cwd, "d.txt"), "d-user", 0o644)
	ckStep(t, ck, "s1", "p2", func() {
		mustWrite(t, filepath.Join(cwd, "a.txt"), "a3", 0o644)
		mustWrite(t, filepath.Join(cwd, "d.txt"), "d-user, then zot", 0o644)
	})
	mustWrite(t, filepath.Join(cwd, "c.txt"), "user's new file", 0o644) // after the last call

	res, err := ck.Restore(first, ckRestoreOptions{Session: "s1"})
	if !errors.Is(err, errCheckpointConflict) {
		t.Fatalf("restore: %v", err)
	}
	var paths []string
	for _, c := range res.Conflicts {
		paths = append(paths, c.Path)
	}
	slices.Sort(paths)
	if !slices.Equal(paths, []string{"b.txt", "c.txt", "d.txt"}) {
		t.Fatalf("conflicts %+v", res.Conflicts)
	}
	if b, _ := os.ReadFile(filepath.Join(cwd, "a.txt")); string(b) != "a3" {
		t.Fatalf("a refused restore changed a.txt: %q", b)
	}
	// Keeping them restores the rest.
	if _, err := ck.Restore(first, ckRestoreOptions{Session: "s1", Keep: paths}); err != nil {
		t.Fatal(err)
	}
	got := treeState(t, cwd)
	if got["a.txt"] != "644 a1" || got["b.txt"] != "644 b-user" || got["c.txt"] != "644 user's new file" || got["d.txt"] != "644 d-user, then zot" {
		t.Fatalf("keep: %v", got)
	}
	// Force overwrites them.
	if _, err := ck.Restore(first, ckRestoreOptions{Session: "s1", Force: true}); err != nil {
		t.Fatal(err)
	}
	got = treeState(t, cwd)
	if got["b.txt"] != "644 b1" || got["c.txt"] != "" || got["d.txt"] != "644 d1" {
		t.Fatalf("force: %v", got)
	}
	// What a forced restore overwrote is no longer at stake: going back
	// further finds no conflict.
	if _, err := ck.Restore(first, ckRestoreOptions{Session: "s1"}); err != nil {
		t.Fatalf("after the forced restore: %v", err)
	}
}

// Ignored files, .git, caches and files over the size limit are not
// recorded; a restore leaves them as they are, even one created after the
// checkpoint, which a restore would otherwise remove.
func TestCheckpointLeavesWhatItDoesNotRecord(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	set := DefaultCheckpointSettings()
	set.MaxFileSize = 100
	ck := OpenCheckpoints(home, cwd, nil, set)
	mustWrite(t, filepath.Join(cwd, ".gitignore"), "*.log\nbuild/\n!keep.log\n", 0o644)
	mustWrite(t, filepath.Join(cwd, "src.go"), "package x", 0o644)
	id := ckStep(t, ck, "s1", "p", func() {
		mustWrite(t, filepath.Join(cwd, "src.go"), "package y", 0o644)
		mustWrite(t, filepath.Join(cwd, "out.log"), "log", 0o644)
		mustWrite(t, filepath.Join(cwd, "keep.log"), "kept", 0o644)
		mustWrite(t, filepath.Join(cwd, "build", "bin"), "binary", 0o644)
		mustWrite(t, filepath.Join(cwd, ".git", "HEAD"), "ref", 0o644)
		mustWrite(t, filepath.Join(cwd, "node_modules", "m.js"), "js", 0o644)
		mustWrite(t, filepath.Join(cwd, "big.bin"), strings.Repeat("x", 101), 0o644)
		mustWrite(t, filepath.Join(cwd, "target", "CACHEDIR.TAG"), "Signature: 8a477f597d28d172789f06886806bc55\n", 0o644)
	})
	if _, err := ck.Restore(id, ckRestoreOptions{Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	got := treeState(t, cwd)
	for _, p := range []string{"out.log", "build/bin", ".git", "node_modules/m.js", "big.bin", "target/CACHEDIR.TAG"} {
		if _, ok := got[p]; !ok && p != ".git" {
			t.Errorf("%s was removed: %v", p, got)
		}
	}
	if _, err := os.Stat(filepath.Join(cwd, ".git", "HEAD")); err != nil {
		t.Errorf(".git was touched: %v", err)
	}
	if _, ok := got["keep.log"]; ok {
		t.Errorf("keep.log (negated, so recorded) was not removed")
	}
	if got["src.go"] != "644 package x" {
		t.Errorf("src.go = %q", got["src.go"])
	}
}

// A checkpoint of an unchanged tree stores nothing new; one that changes
// one file adds that file and the trees above it.
func TestCheckpointStoresOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	ck, cwd := testCheckpoints(t)
	ck.now = func() time.Time { return time.Now().Add(3 * racyWindow) }
	for i := 0; i < 50; i++ {
		mustWrite(t, filepath.Join(cwd, fmt.Sprintf("d%d", i%5), fmt.Sprintf("f%d.txt", i)), strings.Repeat("content ", i+1), 0o644)
	}
	ckStep(t, ck, "s1", "p", func() {})
	objects := func() int {
		n := 0
		filepath.Walk(filepath.Join(ck.dir, "objects"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	n0 := objects()
	ckStep(t, ck, "s1", "p", func() {})
	if n := objects(); n != n0 {
		t.Fatalf("an unchanged tree added %d objects", n-n0)
	}
	ckStep(t, ck, "s1", "p", func() { mustWrite(t, filepath.Join(cwd, "d3", "f3.txt"), "new bytes", 0o644) })
	// The new file, its directory's tree and the root's tree.
	if n := objects(); n != n0+3 {
		t.Fatalf("changing one file added %d objects, want 3", n-n0)
	}
}

// The model replaces a directory with a symlink to a directory outside the
// project: the snapshot records the link (it does not walk out), and the
// restore puts the directory back without writing through the link.
func TestCheckpointRestoreNeverFollowsASymlinkOut(t *testing.T) {
	t.Parallel()
	ck, cwd := testCheckpoints(t)
	outside := t.TempDir()
	mustWrite(t, filepath.Join(outside, "f.txt"), "outside's", 0o644)
	mustWrite(t, filepath.Join(cwd, "sub", "f.txt"), "inside", 0o644)
	id := ckStep(t, ck, "s1", "p", func() {
		os.RemoveAll(filepath.Join(cwd, "sub"))
		os.Symlink(outside, filepath.Join(cwd, "sub"))
	})
	recs, _ := ck.sessionRecords("s1")
	if e, found, err := ck.lookup(recs.Records[0].Roots[0].After, "sub"); err != nil || !found || e.Kind != kindLink {
		t.Fatalf("the snapshot after: %+v %v %v", e, found, err)
	}
	if _, err := ck.Restore(id, ckRestoreOptions{Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "f.txt")); string(b) != "outside's" {
		t.Fatalf("the restore wrote through the link: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(cwd, "sub")); err != nil || !fi.IsDir() {
		t.Fatalf("sub is not a directory again: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(cwd, "sub", "f.txt")); string(b) != "inside" {
		t.Fatalf("sub/f.txt = %q", b)
	}
}

// A symlink swapped in between the plan and its application — a process
// racing the restore — is refused, not followed: nothing outside changes.
func TestCheckpointRestoreRefusesASymlinkSwappedInMidway(t *testing.T) {
	t.Parallel()
	ck, cwd := testCheckpoints(t)
	outside := t.TempDir()
	mustWrite(t, filepath.Join(cwd, "sub", "f.txt"), "inside", 0o644)
	mustWrite(t, filepath.Join(cwd, "sub", "gone.txt"), "bye", 0o644)
	ckStep(t, ck, "s1", "p", func() {
		mustWrite(t, filepath.Join(cwd, "sub", "f.txt"), "changed", 0o644)
		os.Remove(filepath.Join(cwd, "sub", "gone.txt"))
		mustWrite(t, filepath.Join(cwd, "sub", "new.txt"), "new", 0o644)
	})
	recs, _ := ck.sessionRecords("s1")
	r := recs.Records[0].Roots[0]
	p := &ckPlan{c: ck, root: cwd}
	if err := p.merge(r.Before, r.After, ""); err != nil {
		t.Fatal(err)
	}
	if len(p.actions) != 3 {
		t.Fatalf("plan %+v", p.actions)
	}
	// The race: sub becomes a link to a directory outside, with files of
	// the same names.
	os.Rename(filepath.Join(cwd, "sub"), filepath.Join(cwd, "sub.moved"))
	os.Symlink(outside, filepath.Join(cwd, "sub"))
	mustWrite(t, filepath.Join(outside, "new.txt"), "outside's own", 0o644)
	res := &ckRestoreResult{}
	p.apply(res)
	if len(res.Errors) != 3 || !strings.Contains(res.Errors[0], "sub is a symlink or a file where a directory should be: not followed") {
		t.Fatalf("errors: %q", res.Errors)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Fatalf("the restore wrote outside: %v", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "new.txt")); string(b) != "outside's own" {
		t.Fatalf("the restore removed or changed a file outside: %q", b)
	}
}

// Pruning removes the oldest sessions first until the project fits, keeps
// the newest, deletes the objects only they reached, and makes a running
// zot forget what it knew of them: its next checkpoint stores them again.
func TestCheckpointPruneRemovesOldestSessionsFirst(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	set := DefaultCheckpointSettings()
	ck := OpenCheckpoints(home, cwd, nil, set)
	ck.pruned = true
	ck.now = func() time.Time { return time.Now().Add(3 * racyWindow) }
	mustWrite(t, filepath.Join(cwd, "g.txt"), "g", 0o644)
	ckStep(t, ck, "newest", "p", func() {})
	ckStep(t, ck, "middle", "p", func() { mustWrite(t, filepath.Join(cwd, "m.bin"), strings.Repeat("m", 200_000), 0o644) })
	ckStep(t, ck, "oldest", "p", func() { mustWrite(t, filepath.Join(cwd, "f.bin"), strings.Repeat("f", 300_000), 0o644) })
	age := func(session string, d time.Duration) {
		files, _ := filepath.Glob(filepath.Join(ck.sessionDir(session), "*.json"))
		for _, f := range files {
			when := time.Now().Add(-d)
			os.Chtimes(f, when, when)
		}
	}
	age("oldest", 3*time.Hour)
	age("middle", 2*time.Hour)
	age("newest", 0)
	size := dirSize(ck.dir)
	set.MaxProjectSize = size - 250_000 // room for all but the oldest session's file
	rep, err := PruneCheckpoints(home, set, "")
	if err != nil || len(rep.Problems) > 0 {
		t.Fatal(err, rep.Problems)
	}
	if len(rep.Removed) != 1 || !strings.HasSuffix(rep.Removed[0], "session oldest") || rep.After >= rep.Before {
		t.Fatalf("removed %v, %d → %d", rep.Removed, rep.Before, rep.After)
	}
	sessions, _ := ck.sessions()
	if len(sessions) != 2 {
		t.Fatalf("sessions left: %+v", sessions)
	}
	// f.bin's bytes went with the oldest session, but this zot's index
	// still names them: its next checkpoint must store them again.
	id := ckStep(t, ck, "newest", "q", func() { os.Remove(filepath.Join(cwd, "f.bin")) })
	if _, err := ck.Restore(id, ckRestoreOptions{Session: "newest"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(cwd, "f.bin")); len(b) != 300_000 {
		t.Fatalf("f.bin came back with %d bytes", len(b))
	}
	// The middle session still restores whole.
	recs, _ := ck.sessionRecords("middle")
	if _, err := ck.Restore(recs.Records[0].ID, ckRestoreOptions{Session: "middle", Force: true}); err != nil {
		t.Fatal(err)
	}
	if got := treeState(t, cwd); len(got) != 1 || got["g.txt"] != "644 g" {
		t.Fatalf("after restoring the middle session: %v", got)
	}
	// Nothing is removed below the limits; the newest session never.
	set.MaxProjectSize, set.MaxTotalSize = 1, 1
	rep, err = PruneCheckpoints(home, set, "newest")
	if err != nil {
		t.Fatal(err)
	}
	if sessions, _ := ck.sessions(); len(sessions) != 1 || sessions[0].ID != "newest" {
		t.Fatalf("after pruning to nothing: %+v (%v)", sessions, rep.Removed)
	}
}

func TestCheckpointSettings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		config string
		want   func(s CheckpointSettings) bool
		err    string
	}{
		{``, func(s CheckpointSettings) bool { return s.Enabled && s.MaxFileSize == 10<<20 }, ""},
		{`{"checkpoints": {"enabled": false}}`, func(s CheckpointSettings) bool { return !s.Enabled }, ""},
		{`{"checkpoints": {"max_file_size": "512KB", "max_project_size": 1000, "max_total_size": "1.5GB", "exclude": ["*.bin"]}}`, func(s CheckpointSettings) bool {
			return s.MaxFileSize == 512<<10 && s.MaxProjectSize == 1000 && s.MaxTotalSize == 3<<29 && s.Exclude[0] == "*.bin"
		}, ""},
		{`{"checkpoints": {"max_file_size": "big"}}`, func(s CheckpointSettings) bool { return s.MaxFileSize == 10<<20 }, `"checkpoints": "max_file_size": "big" is not a size such as "10MB"`},
		{`{"checkpoints": {"max_files": 0}}`, func(s CheckpointSettings) bool { return s.MaxFiles == 100_000 }, `"max_files" must be at least 1`},
		{`{"checkpoints": true}`, func(s CheckpointSettings) bool { return s.Enabled }, `"checkpoints": json: cannot unmarshal`},
	} {
		home := t.TempDir()
		if c.config != "" {
			mustWrite(t, filepath.Join(home, "config.json"), c.config, 0o600)
		}
		s, err := LoadCheckpointSettings(home)
		switch {
		case c.err == "" && err != nil, c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), filepath.Join(home, "config.json"))):
			t.Errorf("%s: error %v, want %q", c.config, err, c.err)
		case !c.want(s):
			t.Errorf("%s: settings %+v", c.config, s)
		}
	}
}

// A directory with more files than max_files is not covered, is said so,
// and is neither read nor walked again in the run.
func TestCheckpointLeavesOutATooBigDirectory(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	set := DefaultCheckpointSettings()
	set.MaxFiles = 5
	ck := OpenCheckpoints(home, cwd, nil, set)
	for i := 0; i < 10; i++ {
		mustWrite(t, filepath.Join(cwd, fmt.Sprintf("d%d", i%3), fmt.Sprintf("f%d", i)), "x", 0o644)
	}
	after, notes, err := ck.Before(ckStepInfo{Session: "s", Tool: "bash"})
	if err != nil || len(notes) != 1 || !strings.Contains(notes[0], cwd+" is not covered: it has more than 5 files") || !strings.Contains(notes[0], `"max_files"`) {
		t.Fatalf("notes %q, err %v", notes, err)
	}
	after()
	objects, _ := filepath.Glob(filepath.Join(ck.dir, "objects", "*", "*"))
	if len(objects) != 0 {
		t.Errorf("the files of a directory not covered were stored: %v", objects)
	}
	recs, _ := ck.sessionRecords("s")
	if r := recs.Records[0]; r.Roots[0].Before != "" || r.Roots[0].After != "" || !r.Done {
		t.Errorf("record %+v", r)
	}
	if _, notes, _ := ck.Before(ckStepInfo{Session: "s", Tool: "bash"}); len(notes) != 1 {
		t.Errorf("the second checkpoint: %q", notes)
	}
	if _, err := ck.Restore(recs.Records[0].ID, ckRestoreOptions{}); err == nil || !strings.Contains(err.Error(), "recorded no files ("+cwd+" is not covered") {
		t.Errorf("restore: %v", err)
	}
}

// Two zots recording one session (zot -c in a second terminal) number
// their checkpoints in turn, neither overwriting the other's, though each
// remembers the number it gave last.
func TestCheckpointNumbersAcrossProcesses(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	first := OpenCheckpoints(home, cwd, nil, DefaultCheckpointSettings())
	second := OpenCheckpoints(home, cwd, nil, DefaultCheckpointSettings())
	var ids []string
	for i, ck := range []*Checkpoints{first, first, second, first, second, second, first} {
		ids = append(ids, ckStep(t, ck, "s", fmt.Sprint("step ", i), func() {}))
	}
	want := []string{"s-1", "s-2", "s-3", "s-4", "s-5", "s-6", "s-7"}
	if !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	recs, err := first.sessionRecords("s")
	if err != nil || len(recs.Records) != len(want) {
		t.Fatalf("%d records (%v), want %d", len(recs.Records), err, len(want))
	}
}
