package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The checkpoints end to end: the real binary, a scripted model.

// workSteps is a prompt's worth of calls that edit a file, create one with
// bash, delete one with rm and chmod one, then an answer.
func workSteps() []replayStep {
	return []replayStep{
		toolStep("t1", "edit", obj{"path": "edit.txt", "oldText": "one", "newText": "two"}),
		toolStep("t2", "bash", obj{"command": "echo made > made.txt"}),
		toolStep("t3", "bash", obj{"command": "rm doomed.txt"}),
		toolStep("t4", "bash", obj{"command": "chmod 755 script.sh"}),
		{Events: anthropicEvents(gen{Text: "done"})},
	}
}

// workProject writes the files workSteps change and returns the tree.
func workProject(t *testing.T, dir string) map[string]string {
	mustWrite(t, filepath.Join(dir, "edit.txt"), "one\n", 0o644)
	mustWrite(t, filepath.Join(dir, "doomed.txt"), "keep me\n", 0o640)
	mustWrite(t, filepath.Join(dir, "script.sh"), "#!/bin/sh\necho hi\n", 0o644)
	return treeState(t, dir)
}

// checkpointIDs runs zot checkpoints list and returns the first word of
// each line.
func checkpointIDs(t *testing.T, z *zotRun, args ...string) []string {
	t.Helper()
	out, stderr, code := z.run(append([]string{"checkpoints", "list"}, args...)...)
	if code != 0 {
		t.Fatalf("checkpoints list: exit %d: %s", code, stderr)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			ids = append(ids, f[0])
		}
	}
	return ids
}

// A session edits a file, creates one with bash, deletes one with rm and
// chmods one; restoring its first checkpoint brings all four back exactly,
// bytes and modes, and the conversation back to before the prompt. The
// restore is a checkpoint of its own, which undoes it.
func TestCheckpointsRestoreBringsBackEditBashRmAndChmod(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, workSteps()...)
	z := newZotRun(t)
	before := workProject(t, z.cwd)
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "do the work")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	after := treeState(t, z.cwd)
	if after["edit.txt"] != "644 two\n" || after["made.txt"] != "644 made\n" || after["doomed.txt"] != "" || after["script.sh"] != "755 #!/bin/sh\necho hi\n" {
		t.Fatalf("the session did not do its work: %v", after)
	}

	out, _, _ := z.run("checkpoints", "list")
	ids := checkpointIDs(t, z)
	if len(ids) != 4 {
		t.Fatalf("want one checkpoint per call, oldest first:\n%s", out)
	}
	for i, want := range []string{"edit", "bash", "bash", "bash"} {
		if f := strings.Fields(strings.Split(out, "\n")[i]); f[3] != want || !strings.Contains(strings.Split(out, "\n")[i], `"do the work"`) {
			t.Errorf("line %d: %q", i, strings.Split(out, "\n")[i])
		}
	}
	if !strings.Contains(out, "changed made.txt") || !strings.Contains(out, "changed doomed.txt") {
		t.Errorf("the list does not say what each call changed:\n%s", out)
	}

	stdout, stderr, code := z.run("checkpoints", "restore", ids[0])
	if code != 0 {
		t.Fatalf("restore: exit %d: %s", code, stderr)
	}
	if got := treeState(t, z.cwd); !mapsEqual(got, before) {
		t.Fatalf("after restore:\n%v\nwant:\n%v\n%s", got, before, stdout)
	}
	if !strings.Contains(stdout, "removed  made.txt") || !strings.Contains(stdout, "restored doomed.txt") || !strings.Contains(stdout, "0 messages kept") {
		t.Errorf("restore said:\n%s", stdout)
	}
	// The conversation went back to before the prompt: -c finds it empty.
	list, _ := filepath.Glob(filepath.Join(z.home, "sessions", "*", "*.jsonl"))
	if len(list) != 1 {
		t.Fatalf("sessions %v", list)
	}
	_, loaded, err := OpenSession(list[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Messages) != 0 {
		t.Errorf("the conversation kept %d messages", len(loaded.Messages))
	}

	// Restoring the restore's own checkpoint undoes it.
	ids = checkpointIDs(t, z)
	if len(ids) != 5 {
		t.Fatalf("the restore took no checkpoint: %v", ids)
	}
	if _, stderr, code := z.run("checkpoints", "restore", "--files-only", ids[4]); code != 0 {
		t.Fatalf("undo the restore: exit %d: %s", code, stderr)
	}
	if got := treeState(t, z.cwd); !mapsEqual(got, after) {
		t.Fatalf("after undoing the restore:\n%v\nwant:\n%v", got, after)
	}
}

// A file the user changed after the step is not overwritten without
// --force: the restore names it and changes nothing.
func TestCheckpointsRestoreKeepsTheUsersChangesWithoutForce(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, workSteps()...)
	z := newZotRun(t)
	before := workProject(t, z.cwd)
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "do the work")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mustWrite(t, filepath.Join(z.cwd, "edit.txt"), "two, and the user's own line\n", 0o644)
	changed := treeState(t, z.cwd)
	ids := checkpointIDs(t, z)

	_, stderr, code := z.run("checkpoints", "restore", "--files-only", ids[0])
	if code != 1 || !strings.Contains(stderr, "nothing restored") || !strings.Contains(stderr, "edit.txt: changed since zot last recorded it") || !strings.Contains(stderr, "--force") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "made.txt") {
		t.Errorf("zot's own changes were named as conflicts: %s", stderr)
	}
	if got := treeState(t, z.cwd); !mapsEqual(got, changed) {
		t.Fatalf("a refused restore changed files:\n%v", got)
	}
	if _, stderr, code := z.run("checkpoints", "restore", "--files-only", "--force", ids[0]); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, stderr)
	}
	if got := treeState(t, z.cwd); !mapsEqual(got, before) {
		t.Fatalf("after --force:\n%v\nwant:\n%v", got, before)
	}
}

// zot killed (-9) in the middle of a bash call leaves the checkpoint taken
// before the call whole: restoring it brings the files back. Since zot
// could not record what the call changed, the restore first names those
// files and asks for --force, as for anyone else's changes.
func TestCheckpointsSurviveKill9DuringBash(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "sleeper.pid")
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "echo first > first.txt"}),
		toolStep("t2", "bash", obj{"command": "echo half > half.txt; echo broken > edit.txt; sleep 300 & echo $! > " + pidFile + "; wait"}),
		replayStep{Events: anthropicEvents(gen{Text: "never"})})
	z := newZotRun(t)
	workProject(t, z.cwd)
	cmd := z.cmd(append(anthropicFlags(srv), "-p", "work")...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sleeper := 0
	t.Cleanup(func() {
		cmd.Process.Kill()
		if sleeper > 0 {
			syscall.Kill(sleeper, syscall.SIGKILL)
		}
	})
	waitFor(t, "the second call to run", func() bool {
		b, _ := os.ReadFile(pidFile)
		sleeper, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return sleeper > 0
	})
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	out, stderr, _ := z.run("checkpoints", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "zot stopped during the call") || stderr != "" {
		t.Fatalf("list after kill -9:\n%s\n%s", out, stderr)
	}
	second := strings.Fields(lines[1])[0]
	_, stderr, code := z.run("checkpoints", "restore", "--files-only", second)
	if code != 1 || !strings.Contains(stderr, "half.txt: zot stopped during the call of checkpoint "+second+" (bash)") || !strings.Contains(stderr, "edit.txt: zot stopped") {
		t.Fatalf("restore without --force: exit %d: %s", code, stderr)
	}
	if _, stderr, code := z.run("checkpoints", "restore", "--files-only", "--force", second); code != 0 {
		t.Fatalf("restore --force: exit %d: %s", code, stderr)
	}
	got := treeState(t, z.cwd)
	if got["edit.txt"] != "644 one\n" || got["half.txt"] != "" || got["first.txt"] != "644 first\n" {
		t.Fatalf("after restore: %v", got)
	}
}

// A damaged manifest or object is reported, named, and never used: the
// files stay as they are.
func TestCheckpointsRefuseADamagedStore(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, workSteps()...)
	z := newZotRun(t)
	workProject(t, z.cwd)
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "do the work")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ids := checkpointIDs(t, z)
	changed := treeState(t, z.cwd)
	manifests, _ := filepath.Glob(filepath.Join(z.home, "checkpoints", "*", "sessions", "*", "000001.json"))
	if len(manifests) != 1 {
		t.Fatalf("manifests: %v", manifests)
	}
	b, _ := os.ReadFile(manifests[0])
	os.WriteFile(manifests[0], []byte(strings.Replace(string(b), `"kind":"step"`, `"kind":"stop"`, 1)), 0o600)

	_, stderr, code := z.run("checkpoints", "restore", ids[0])
	if code != 1 || !strings.Contains(stderr, "checkpoint store damaged: "+manifests[0]+": the manifest does not match its checksum") {
		t.Fatalf("restore of a corrupt manifest: exit %d: %s", code, stderr)
	}
	out, stderr, _ := z.run("checkpoints", "list")
	if !strings.Contains(stderr, manifests[0]) || strings.HasPrefix(out, ids[0]+" ") {
		t.Errorf("list: %s\n%s", out, stderr)
	}

	// An object the restore needs, damaged: named, and nothing written.
	var entry ckListEntry
	jsonOut, _, _ := z.run("checkpoints", "list", "--json")
	sc := bufio.NewScanner(strings.NewReader(jsonOut))
	sc.Scan()
	json.Unmarshal(sc.Bytes(), &entry)
	rec, err := readRecord(strings.Replace(manifests[0], "000001", "000003", 1))
	if err != nil || rec.ID != ids[2] {
		t.Fatalf("read %v %v", rec, err)
	}
	ck := OpenCheckpoints(z.home, z.cwd, nil, DefaultCheckpointSettings())
	doomed, found, err := ck.lookup(rec.Roots[0].Before, "doomed.txt")
	if err != nil || !found {
		t.Fatalf("lookup: %v %v", found, err)
	}
	object := ck.objectPath(doomed.Hash)
	os.Chmod(object, 0o600)
	os.WriteFile(object, []byte("tampered\n"), 0o600)
	_, stderr, code = z.run("checkpoints", "restore", "--files-only", ids[2])
	if code != 1 || !strings.Contains(stderr, "checkpoint store damaged: "+object+": the object does not match its hash") {
		t.Fatalf("restore with a damaged object: exit %d: %s", code, stderr)
	}
	if got := treeState(t, z.cwd); !mapsEqual(got, changed) {
		t.Fatalf("a refused restore changed files:\n%v", got)
	}
}

// An exported session carries nothing of the checkpoints.
func TestCheckpointsStayOutOfExportedSessions(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, workSteps()...)
	z := newZotRun(t)
	workProject(t, z.cwd)
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "do the work")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ids := checkpointIDs(t, z)
	out, stderr, code := z.run("sessions", "export", "latest", "-o", "-")
	if code != 0 {
		t.Fatalf("export: %s", stderr)
	}
	objects, _ := filepath.Glob(filepath.Join(z.home, "checkpoints", "*", "objects", "*", "*"))
	if len(objects) == 0 {
		t.Fatal("no objects")
	}
	for _, o := range objects {
		if hash := filepath.Base(filepath.Dir(o)) + filepath.Base(o); strings.Contains(out, hash) {
			t.Errorf("the export names object %s", hash)
		}
	}
	if strings.Contains(out, ids[0]) || strings.Contains(out, "checkpoint") {
		t.Errorf("the export mentions checkpoints:\n%s", truncate(out, 2000))
	}
}
