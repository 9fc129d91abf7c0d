package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// A bash call that runs a program that only reads (cat, ls) takes no
// checkpoint, as a read does not; the rm after them takes one.
func TestCheckpointsSkipBashCallsThatOnlyRead(t *testing.T) {
	t.Parallel()
	needBash5(t)
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "cat edit.txt"}),
		toolStep("t2", "bash", obj{"command": "ls -la"}),
		toolStep("t3", "bash", obj{"command": "rm doomed.txt"}),
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	z := newZotRun(t)
	workProject(t, z.cwd)
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "look, then remove")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	out, stderr, code := z.run("checkpoints", "list")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 1 || !strings.Contains(out, "doomed.txt") {
		t.Fatalf("want one checkpoint, the rm's (exit %d):\n%s%s", code, out, stderr)
	}
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
	sess, loaded, err := OpenSession(list[0])
	if err != nil {
		t.Fatal(err)
	}
	sess.Close()
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

	// The same restore again (as after a kill -9 that landed once the
	// conversation was rewound): the files come back, the conversation,
	// which holds nothing from the prompt on, is left as it is.
	stdout, stderr, code = z.run("checkpoints", "restore", ids[0])
	if code != 0 || !strings.Contains(stdout, `nothing from the prompt "do the work" on is in`) {
		t.Fatalf("restore again: exit %d:\n%s%s", code, stdout, stderr)
	}
	if got := treeState(t, z.cwd); !mapsEqual(got, before) {
		t.Fatalf("after restoring again:\n%v\nwant:\n%v", got, before)
	}
	// A compaction's summary is newer than the prompt: that conversation
	// is not taken for one already rewound, and nothing is restored.
	sess, _, err = OpenSession(list[0])
	if err != nil {
		t.Fatal(err)
	}
	summary := Message{Role: RoleUser, Content: []Block{TextBlock("[Summary of the earlier conversation]")}, Time: time.Now().UTC()}
	if err := errors.Join(sess.Reset([]Message{summary}), sess.Close()); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(z.cwd, "edit.txt"), "mine\n", 0o644)
	_, stderr, code = z.run("checkpoints", "restore", ids[0])
	if code != 1 || !strings.Contains(stderr, "is no longer in the conversation") {
		t.Fatalf("restore after a compaction: exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(z.cwd, "edit.txt")); string(b) != "mine\n" {
		t.Errorf("a refused restore changed edit.txt: %q", b)
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

// tuiWithTwoPrompts is the TUI after two prompts: "change a" edited a.txt
// (a1 → a2), "make b" wrote b.txt with bash.
func tuiWithTwoPrompts(t *testing.T) (*zotRun, *tmuxTerm) {
	t.Helper()
	srv := startReplay(t,
		toolStep("t1", "edit", obj{"path": "a.txt", "oldText": "a1", "newText": "a2"}),
		replayStep{Events: anthropicEvents(gen{Text: "First done."})},
		toolStep("t2", "bash", obj{"command": "echo b > b.txt"}),
		replayStep{Events: anthropicEvents(gen{Text: "Second done."})})
	z := newZotRun(t)
	mustWrite(t, filepath.Join(z.cwd, "a.txt"), "a1\n", 0o644)
	tm := startTUI(t, z, anthropicFlags(srv)...)
	tm.waitFor("/help for keys")
	tm.typeText("change a")
	tm.keys("Enter")
	tm.waitFor("First done.")
	tm.typeText("make b")
	tm.keys("Enter")
	tm.waitFor("Second done.")
	return z, tm
}

// /undo in the TUI undoes only the last prompt's changes and keeps the
// conversation; a second /undo goes one prompt further back, and asks
// before it overwrites a file the user changed since.
func TestTUIUndoUndoesTheLastPrompt(t *testing.T) {
	t.Parallel()
	needTmux(t)
	z, tm := tuiWithTwoPrompts(t)
	if got := treeState(t, z.cwd); got["a.txt"] != "644 a2\n" || got["b.txt"] != "644 b\n" {
		t.Fatalf("before /undo: %v", got)
	}

	tm.typeText("/undo")
	tm.keys("Enter")
	tm.waitFor(`/undo: files back to before "make b"`)
	if got := treeState(t, z.cwd); got["a.txt"] != "644 a2\n" || got["b.txt"] != "" {
		t.Fatalf("after /undo: %v", got)
	}

	// The user edits a.txt; the next /undo (of "change a") asks first.
	mustWrite(t, filepath.Join(z.cwd, "a.txt"), "a2 and mine\n", 0o644)
	tm.typeText("/undo")
	tm.keys("Enter")
	tm.waitFor("overwrite the files changed since?")
	screen := tm.waitFor("a.txt: changed since zot last recorded it")
	if !strings.Contains(screen, "1 files changed after zot recorded them") {
		t.Errorf("screen:\n%s", screen)
	}
	tm.keys("Enter") // cancel is chosen
	tm.waitFor("/undo: nothing changed")
	if got := treeState(t, z.cwd); got["a.txt"] != "644 a2 and mine\n" {
		t.Fatalf("a cancelled /undo changed a.txt: %v", got)
	}
	tm.typeText("/undo")
	tm.keys("Enter")
	tm.waitFor("overwrite the files changed since?")
	tm.keys("Up", "Up", "Enter") // overwrite
	tm.waitFor(`/undo: files back to before "change a"`)
	if got := treeState(t, z.cwd); got["a.txt"] != "644 a1\n" || got["b.txt"] != "" {
		t.Fatalf("after the second /undo: %v", got)
	}
	// What the forced undo overwrote is in its own checkpoint.
	screen = tm.waitFor(" takes this back")
	undo := regexp.MustCompile(`/undo (\S+) takes this back`).FindAllStringSubmatch(screen, -1)
	tm.typeText("/undo " + undo[len(undo)-1][1])
	tm.keys("Enter")
	tm.waitFor(`/undo: files back to before checkpoint ` + undo[len(undo)-1][1])
	if got := treeState(t, z.cwd); got["a.txt"] != "644 a2 and mine\n" {
		t.Fatalf("after undoing the undo: %v", got)
	}
	tm.exitAndCheck()

	// The conversation was kept whole.
	list, _ := filepath.Glob(filepath.Join(z.home, "sessions", "*", "*.jsonl"))
	if len(list) != 1 {
		t.Fatalf("sessions: %v", list)
	}
	info, err := readSessionInfo(list[0])
	if err != nil || info.Messages != 8 {
		t.Errorf("the session holds %d messages, want 8 (%v)", info.Messages, err)
	}
}

// rpc get_checkpoints lists the session's checkpoints; rewind restores
// files, the conversation or both, and refuses, naming them, to overwrite
// files changed since unless "force".
func TestRPCRewind(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("t1", "write", obj{"path": "notes.txt", "content": "v1\n"}),
		replayStep{Events: anthropicEvents(gen{Text: "ok1"})},
		toolStep("t2", "edit", obj{"path": "notes.txt", "oldText": "v1", "newText": "v2"}),
		replayStep{Events: anthropicEvents(gen{Text: "ok2"})})
	z := newZotRun(t)
	p := startRPCProc(t, z, append([]string{"rpc"}, anthropicFlags(srv)...)...)
	isDone := func(o rpcOut) bool { return o.Type == "done" }
	p.send(`{"type":"prompt","message":"write notes"}`)
	p.until(isDone)
	p.send(`{"type":"prompt","message":"edit notes"}`)
	p.until(isDone)

	p.send(`{"id":"l","type":"get_checkpoints"}`)
	var list struct{ Checkpoints []ckListEntry }
	r := p.until(isResponse("l"))
	if json.Unmarshal(r[len(r)-1].Data, &list); len(list.Checkpoints) != 2 || list.Checkpoints[0].Prompt != "write notes" || list.Checkpoints[1].Changed[0] != "notes.txt" {
		t.Fatalf("get_checkpoints: %s", r[len(r)-1].Raw)
	}

	p.send(`{"id":"bad","type":"rewind","restore":"all"}`)
	if r := p.until(isResponse("bad")); !strings.Contains(r[len(r)-1].Error, `"restore" "all" is not one of both, files, conversation`) {
		t.Errorf("bad restore: %s", r[len(r)-1].Raw)
	}

	mustWrite(t, filepath.Join(z.cwd, "notes.txt"), "v2 and the user's\n", 0o644)
	p.send(`{"id":"u1","type":"rewind","restore":"files"}`)
	r = p.until(isResponse("u1"))
	if o := r[len(r)-1]; o.Success || !strings.Contains(o.Error, "notes.txt (changed since zot last recorded it") || !strings.Contains(o.Error, `"force":true`) {
		t.Fatalf("rewind over the user's change: %s", o.Raw)
	}
	if b, _ := os.ReadFile(filepath.Join(z.cwd, "notes.txt")); string(b) != "v2 and the user's\n" {
		t.Fatalf("a refused rewind changed the file: %q", b)
	}
	p.send(`{"id":"u2","type":"rewind","restore":"files","force":true}`)
	r = p.until(isResponse("u2"))
	var data rpcRewindData
	json.Unmarshal(r[len(r)-1].Data, &data)
	if b, _ := os.ReadFile(filepath.Join(z.cwd, "notes.txt")); string(b) != "v1\n" || data.Checkpoint != list.Checkpoints[1].ID || data.Undo == "" || data.Messages != nil {
		t.Fatalf("forced rewind: %q %s", b, r[len(r)-1].Raw)
	}

	p.send(`{"id":"both","type":"rewind","checkpoint":"` + list.Checkpoints[0].ID + `"}`)
	r = p.until(isResponse("both"))
	if json.Unmarshal(r[len(r)-1].Data, &data); data.Messages == nil || *data.Messages != 0 || len(data.Removed) != 1 {
		t.Fatalf("rewind both: %s", r[len(r)-1].Raw)
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "notes.txt")); !os.IsNotExist(err) {
		t.Errorf("notes.txt is still there: %v", err)
	}
	p.send(`{"id":"m","type":"get_messages"}`)
	if r := p.until(isResponse("m")); !strings.Contains(r[len(r)-1].Raw, `"messages":[]`) {
		t.Errorf("the conversation was not rewound: %s", r[len(r)-1].Raw)
	}
}

// With --sandbox, the directories of sandbox_writable outside the project
// are covered too: what a command changed there is restored.
func TestCheckpointsCoverSandboxWritableDirectories(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the sandbox end-to-end tests run on Linux")
	}
	z := newZotRun(t)
	writable := t.TempDir()
	z.env = append(z.env, "TMPDIR="+t.TempDir()) // so that writable is not in it
	mustWrite(t, filepath.Join(z.home, "config.json"), `{"sandbox_writable": ["`+writable+`"]}`, 0o600)
	mustWrite(t, filepath.Join(writable, "cache.txt"), "c1\n", 0o644)
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "echo c2 > " + writable + "/cache.txt; echo new > " + writable + "/new.txt; echo p > here.txt"}),
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--sandbox", "workspace", "go")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	out, _, _ := z.run("checkpoints", "list", "--json")
	var entry ckListEntry
	if json.Unmarshal([]byte(out), &entry); !slices.Contains(entry.Changed, filepath.Join(writable, "cache.txt")) || !slices.Contains(entry.Changed, "here.txt") || !slices.Contains(entry.Roots, writable) {
		t.Fatalf("list:\n%s", out)
	}
	if _, stderr, code := z.run("checkpoints", "restore", checkpointIDs(t, z)[0]); code != 0 {
		t.Fatalf("restore: %s", stderr)
	}
	if got := treeState(t, writable); len(got) != 1 || got["cache.txt"] != "644 c1\n" {
		t.Errorf("the writable directory after restore: %v", got)
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "here.txt")); !os.IsNotExist(err) {
		t.Errorf("here.txt: %v", err)
	}
}

// /rewind lists the prompts with the files each changed; going back to
// before the first restores the files and the conversation, and puts the
// prompt back into the editor.
func TestTUIRewindRestoresFilesAndConversation(t *testing.T) {
	t.Parallel()
	needTmux(t)
	z, tm := tuiWithTwoPrompts(t)

	tm.typeText("/rewind")
	tm.keys("Enter")
	screen := tm.waitFor("rewind to before which prompt?")
	for _, want := range []string{"1) change a  — changed a.txt", "2) make b  — changed b.txt"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the picker lacks %q:\n%s", want, screen)
		}
	}
	tm.keys("Up", "Enter")
	tm.waitFor("the files and the conversation")
	tm.keys("Enter")
	screen = tm.waitFor("rewound the conversation to before prompt 1")
	if !strings.Contains(screen, `/rewind: files back to before "change a"`) {
		t.Errorf("screen:\n%s", screen)
	}
	if got := treeState(t, z.cwd); len(got) != 1 || got["a.txt"] != "644 a1\n" {
		t.Fatalf("after /rewind: %v", got)
	}
	tm.waitScreen("the prompt back in the editor", func(s string) bool {
		_, editor, _ := strings.Cut(s, "rewound the conversation to before prompt 1")
		return strings.Contains(editor, "› change a")
	})
	tm.exitAndCheck()
	list, _ := filepath.Glob(filepath.Join(z.home, "sessions", "*", "*.jsonl"))
	if info, err := readSessionInfo(list[0]); err != nil || info.Messages != 0 {
		t.Errorf("the session holds %d messages after the rewind (%v)", info.Messages, err)
	}
}

// "enabled": false in config.json turns checkpoints off; a bad setting is
// named on stderr and the run goes on with the defaults.
func TestCheckpointsSettingsInConfig(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "echo x > x.txt"}), replayStep{Events: anthropicEvents(gen{Text: "done"})},
		toolStep("t2", "bash", obj{"command": "echo y > y.txt"}), replayStep{Events: anthropicEvents(gen{Text: "done"})})
	z := newZotRun(t)
	mustWrite(t, filepath.Join(z.home, "config.json"), `{"checkpoints": {"enabled": false}}`, 0o600)
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "go")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(z.home, "checkpoints")); !os.IsNotExist(err) {
		t.Errorf("checkpoints were taken while off: %v", err)
	}
	mustWrite(t, filepath.Join(z.home, "config.json"), `{"checkpoints": {"max_file_size": "huge"}}`, 0o600)
	_, stderr, code := z.run(append(anthropicFlags(srv), "-p", "go")...)
	if code != 0 || !strings.Contains(stderr, `config.json: "checkpoints": "max_file_size": "huge" is not a size such as "10MB" (checkpoints use their defaults)`) {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if ids := checkpointIDs(t, z); len(ids) != 1 {
		t.Errorf("checkpoints: %v", ids)
	}
}
