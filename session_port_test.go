package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loadSessionFile opens a session file read back as zot resumes it.
func loadSessionFile(t *testing.T, path string) *LoadedSession {
	t.Helper()
	sess, loaded, err := OpenSession(path)
	if err != nil {
		t.Fatal(err)
	}
	sess.Close()
	return loaded
}

func TestExportStripsTheDirectoryAndImportRoundTrips(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "first answer"})})
	z := newZotRun(t)
	if _, errOut, code := z.run(append(anthropicFlags(srv), "-p", "remember <kiwi> & co")...); code != 0 {
		t.Fatal(errOut)
	}
	list, _ := ListSessions(z.home, z.cwd)
	if len(list) != 1 {
		t.Fatalf("sessions = %v", list)
	}
	orig, _ := os.ReadFile(list[0].Path)

	out, errOut, code := z.run("sessions", "export", list[0].Meta.ID[:5])
	want := filepath.Join(".", strings.TrimSuffix(filepath.Base(list[0].Path), ".jsonl")+".zotsession")
	if code != 0 || strings.TrimSpace(out) != want {
		t.Fatalf("export: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	exported, err := os.ReadFile(filepath.Join(z.cwd, want))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(exported, []byte(z.cwd)) {
		t.Errorf("the export names the working directory:\n%s", exported)
	}
	origHead, origRest, _ := bytes.Cut(orig, []byte("\n"))
	head, rest, _ := bytes.Cut(exported, []byte("\n"))
	if !bytes.Equal(rest, origRest) {
		t.Errorf("rows after the meta row changed:\n%s\nwant\n%s", rest, origRest)
	}
	var a, b map[string]any
	json.Unmarshal(origHead, &a)
	json.Unmarshal(head, &b)
	a["cwd"] = ""
	if ja, _ := json.Marshal(a); !bytes.Equal(ja, jsonBytes(t, b)) {
		t.Errorf("meta row: %s, want %s", head, ja)
	}
	if st, _ := os.Stat(filepath.Join(z.cwd, want)); st.Mode().Perm() != 0o600 {
		t.Errorf("export mode %v", st.Mode())
	}
	if _, errOut, code := z.run("sessions", "export", "latest", "-o", want); code != 1 || !strings.Contains(errOut, "exists") {
		t.Errorf("export over an existing file: exit %d, %s", code, errOut)
	}
	out, _, _ = z.run("sessions", "export", "latest", "-o", "-")
	if out != string(exported) {
		t.Errorf("-o - wrote\n%s", out)
	}

	other := t.TempDir()
	out, errOut, code = z.run("sessions", "import", "--cwd", other, filepath.Join(z.cwd, want))
	if code != 0 || errOut != "" {
		t.Fatalf("import: exit %d, %s", code, errOut)
	}
	imported := loadSessionFile(t, strings.TrimSpace(out))
	if imported.Meta.ID == list[0].Meta.ID || imported.Meta.Cwd != other || filepath.Dir(strings.TrimSpace(out)) != sessionDir(z.home, other) {
		t.Errorf("imported meta %+v at %s", imported.Meta, out)
	}
	if got := WireMessages(imported.Messages); len(got) != 2 || imported.Messages[0].Text() != "remember <kiwi> & co" || imported.Usage.Output != 20 {
		t.Errorf("imported %d messages %+v, usage %+v", len(got), imported.Messages, imported.Usage)
	}
	out, _, _ = z.run("sessions", "list", "--json", "--cwd", other)
	var entry sessionListEntry
	if err := json.Unmarshal([]byte(out), &entry); err != nil || entry.ID != imported.Meta.ID || entry.Messages != 2 {
		t.Errorf("list --json: %q (%v)", out, err)
	}
}

func jsonBytes(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The reference zot's session files come along: converted, bad rows
// skipped with the file and line named, and the conversation goes on.
func TestImportConvertsTheReferenceZotsSessions(t *testing.T) {
	t.Parallel()
	fixture, _ := filepath.Abs("testdata/sessions/reference-zot.jsonl")
	z := newZotRun(t)
	out, errOut, code := z.run("sessions", "import", fixture)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{fixture + " line 9: not a whole JSON row; skipped it", fixture + ` line 10: message with an unknown role "narrator"; skipped it`, "left out 1 reasoning blocks"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	path := strings.TrimSpace(out)
	l := loadSessionFile(t, path)
	if len(l.Repairs) != 0 {
		t.Errorf("the imported file needed repairs: %v", l.Repairs)
	}
	if l.Meta.Provider != "anthropic" || l.Meta.Model != "claude-opus-4-5" || l.Meta.Cwd != z.cwd || strings.HasPrefix(l.Meta.ID, "3f2a") ||
		!l.Meta.Created.Equal(time.Date(2026, 4, 19, 11, 30, 0, 0, time.UTC)) {
		t.Errorf("meta = %+v", l.Meta)
	}
	got, _ := json.Marshal(WireMessages(l.Messages))
	want := `[{"role":"user","content":[{"type":"text","text":"list the go files"}],"time":"2026-04-19T11:30:05Z"},` +
		`{"role":"assistant","content":[{"type":"text","text":"Let me look."},{"type":"tool_call","id":"toolu_01","name":"bash","args":{"command":"ls *.go"}}],"time":"2026-04-19T11:30:07Z"},` +
		`{"role":"user","content":[{"type":"tool_result","call_id":"toolu_01","is_error":false,"content":[{"type":"text","text":"main.go\nutil.go"}]}],"time":"2026-04-19T11:30:08Z"},` +
		`{"role":"assistant","content":[{"type":"text","text":"Two files: main.go and util.go."}],"time":"2026-04-19T11:30:10Z"},` +
		`{"role":"user","content":[{"type":"text","text":"what is in this picture?"},{"type":"image","mime_type":"image/png","bytes":8}],"time":"2026-04-19T11:32:00Z"},` +
		`{"role":"assistant","content":[{"type":"text","text":"A tiny PNG header."}],"time":"2026-04-19T11:32:04Z"}]`
	if string(got) != want {
		t.Errorf("messages:\n%s\nwant\n%s", got, want)
	}
	// The second usage row repeats the total: the call is the difference.
	if l.Usage.Input != 1300 || l.Usage.Output != 100 || l.Usage.CacheRead != 900 || l.Usage.CacheWrite != 950 || l.LastContext != 100+900+50 {
		t.Errorf("usage %+v, last context %d", l.Usage, l.LastContext)
	}

	// The conversation goes on where it stopped, with the model in use.
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "go on"})})
	if _, errOut, code := z.run("-p", "-c", "--provider", "anthropic", "--base-url", srv.URL, "--api-key", "k", "and now?"); code != 0 {
		t.Fatal(errOut)
	}
	body := string(srv.Requests()[0].Body)
	for _, want := range []string{`"model":"claude-opus-4-5"`, `"tool_use_id":"toolu_01"`, `"name":"bash"`, "A tiny PNG header.", "and now?"} {
		if !strings.Contains(body, want) {
			t.Errorf("request lacks %s: %s", want, truncate(body, 2000))
		}
	}
}

func TestImportConvertsAReferenceCompaction(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	path, notes, err := ImportSession("testdata/sessions/reference-zot-compacted.zotsession", home, cwd)
	if err != nil || len(notes) != 0 {
		t.Fatalf("err %v, notes %q", err, notes)
	}
	l := loadSessionFile(t, path)
	var texts []string
	for _, m := range l.Messages {
		texts = append(texts, string(m.Role)+":"+m.Text())
	}
	if got := strings.Join(texts, "|"); got != "user:[summary] we renamed util.go|assistant:Noted.|user:go on|assistant:|user:" {
		t.Errorf("transcript %s", got)
	}
	if r := l.Messages[4].Content[0]; r.Type != BlockToolResult || r.CallID != "call_7" || !r.IsError {
		t.Errorf("tool result %+v", r)
	}
	if l.Meta.Parent != "" || l.Meta.Provider != "openai" || l.Usage.Input != 5000 || l.Usage.CostUSD != 0.0066 {
		t.Errorf("meta %+v usage %+v", l.Meta, l.Usage)
	}
}

// What is not a session is refused and leaves nothing behind; a row that
// does not fit is skipped and named.
func TestImportNeverHalfWrites(t *testing.T) {
	t.Parallel()
	home, cwd, dir := t.TempDir(), t.TempDir(), t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		return p
	}
	for name, content := range map[string]string{
		"empty":      "",
		"not json":   "hello\n{\"type\":\"meta\"}\n",
		"no meta":    `{"type":"message","message":{"role":"user","content":[]}}` + "\n",
		"newer":      `{"type":"meta","version":99,"id":"x"}` + "\n",
		"no version": `{"type":"meta","id":"x"}` + "\n",
		"bad meta":   `{"type":"meta","meta":{"started":"yesterday"}}` + "\n",
	} {
		if _, _, err := ImportSession(write(name, content), home, cwd); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, name)) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if _, _, err := ImportSession(filepath.Join(dir, "missing"), home, cwd); err == nil {
		t.Error("a missing file was imported")
	}
	if entries, _ := os.ReadDir(sessionDir(home, cwd)); len(entries) != 0 {
		t.Errorf("a refused import left %v", entries)
	}

	own := write("own.jsonl", `{"type":"meta","version":1,"id":"abcd","cwd":"/elsewhere","provider":"openai","model":"gpt-5","created":"2026-01-02T03:04:05Z"}
{"type":"message","message":{"role":"user","content":[{"type":"text","text":"hi"}],"time":"2026-01-02T03:04:06Z"}}
{"type":"usage"}
{"type":"future-row","x":1}
{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"hello"}],"time":"2026-01-02T03:04:07Z"}}
{"type":"message","message":{"role":"user","conte`)
	path, notes, err := ImportSession(own, home, cwd)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(notes, "\n") != own+" line 3: usage row without its usage; skipped it\n"+
		own+` line 4: unknown row type "future-row"; skipped it`+"\n"+own+" line 6: not a whole JSON row; skipped it" {
		t.Errorf("notes:\n%s", strings.Join(notes, "\n"))
	}
	if l := loadSessionFile(t, path); len(l.Messages) != 2 || l.Meta.Model != "gpt-5" || l.Meta.Cwd != cwd || l.Meta.ID == "abcd" {
		t.Errorf("imported %+v", l)
	}
	if entries, _ := os.ReadDir(sessionDir(home, cwd)); len(entries) != 1 {
		t.Errorf("session directory holds %v", entries)
	}
}

func TestSessionTreePutsForksUnderTheirParent(t *testing.T) {
	t.Parallel()
	at := func(h int) time.Time { return time.Date(2026, 1, 1, h, 0, 0, 0, time.UTC) }
	info := func(name, parent string, created int) SessionInfo {
		return SessionInfo{Path: "/s/" + name + ".jsonl", Meta: SessionMeta{ID: name, Parent: parent, Created: at(created), ForkedAt: 2}}
	}
	list := []SessionInfo{
		info("newest", "", 9),
		info("fork-b", "/elsewhere/root.jsonl", 5), // found by its file name
		info("root", "", 1),
		info("fork-a", "/s/root.jsonl", 3),
		info("grandchild", "fork-a.jsonl", 4),
		info("orphan", "/s/deleted.jsonl", 6),
		info("loop-1", "/s/loop-2.jsonl", 7),
		info("loop-2", "/s/loop-1.jsonl", 8),
	}
	var got []string
	for _, r := range SessionTree(list) {
		got = append(got, strings.Repeat(">", r.Depth)+r.Info.Meta.ID)
	}
	if strings.Join(got, " ") != "newest root >fork-a >>grandchild >fork-b orphan loop-1 >loop-2" {
		t.Errorf("tree = %v", got)
	}
	lines := FormatSessionTree(SessionTree(list[2:5]), time.Now())
	if !strings.HasPrefix(lines[1], "└ ") || !strings.HasPrefix(lines[2], "  └ ") || !strings.HasSuffix(lines[2], "(fork after message 2)") {
		t.Errorf("lines:\n%s", strings.Join(lines, "\n"))
	}
}

func TestSessionsCommandUsage(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	for _, args := range [][]string{{"sessions", "--help"}, {"sessions", "export", "-h"}, {"sessions", "import", "--help"}} {
		want := "zot sessions import FILE"
		if args[1] == "export" {
			want = "zot sessions export SESSION"
		}
		if out, _, code := z.run(args...); code != 0 || !strings.Contains(out, want) {
			t.Errorf("%v: exit %d, %s", args, code, out)
		}
	}
	for _, args := range [][]string{{"sessions"}, {"sessions", "frobnicate"}, {"sessions", "import"}, {"sessions", "list", "--bogus"}} {
		if _, errOut, code := z.run(args...); code != 2 || !strings.Contains(errOut, "Usage:") {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
	if _, errOut, code := z.run("sessions", "export", "nosuch"); code != 1 || !strings.Contains(errOut, "no sessions of "+z.cwd+" yet") {
		t.Errorf("unknown session: exit %d, %s", code, errOut)
	}
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	z.run(append(anthropicFlags(srv), "-p", "hello")...)
	if _, errOut, code := z.run("sessions", "export", "nosuch"); code != 1 || !strings.Contains(errOut, `no session "nosuch"`) {
		t.Errorf("unknown session: exit %d, %s", code, errOut)
	}
}

// What a newcomer runs before having any session, or with an argument
// missing, says what is going on.
func TestSessionAndMCPCommandsSayWhatIsMissing(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	for _, c := range []struct {
		args        []string
		code        int
		stdout, err string
	}{
		{[]string{"sessions", "list"}, 0, "no sessions of " + z.cwd + " yet\n", ""},
		{[]string{"sessions", "list", "--json"}, 0, "", ""},
		{[]string{"sessions", "export", "latest"}, 1, "", "zot sessions: no sessions of " + z.cwd + " yet (each prompt run there starts one, in "},
		{[]string{"sessions", "export"}, 2, "", "zot sessions export: SESSION is missing\nUsage: zot sessions export SESSION"},
		{[]string{"mcp", "tools"}, 2, "", "zot mcp tools: NAME is missing\nUsage: zot mcp tools NAME"},
		{[]string{"mcp", "call", "srv"}, 2, "", "zot mcp call: TOOL is missing\n"},
	} {
		stdout, stderr, code := z.run(c.args...)
		if code != c.code || stdout != c.stdout || !strings.HasPrefix(stderr, c.err) || (c.err == "" && stderr != "") {
			t.Errorf("zot %s: exit %d\nstdout %q\nstderr %q", strings.Join(c.args, " "), code, stdout, stderr)
		}
		if strings.Contains(stderr, "--continue") {
			t.Errorf("zot %s speaks of --continue: %s", strings.Join(c.args, " "), stderr)
		}
	}
	// A root session has no parent in --json; a fork names its parent.
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "hello")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	stdout, _, _ := z.run("sessions", "list", "--json")
	if strings.Contains(stdout, `"parent"`) || !strings.Contains(stdout, `"first_prompt":"hello"`) {
		t.Errorf("--json: %s", stdout)
	}
}

// A config.json zot cannot read stops it with one error that says what to
// do, rather than "(ignored)" followed by a refusal; with --sandbox it is
// ignored, and says so.
func TestUnreadableConfigIsOneClearError(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	os.WriteFile(filepath.Join(z.home, "config.json"), []byte(`{"provider":"anth`), 0o600)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	_, stderr, code := z.run(append(anthropicFlags(srv), "-p", "hi")...)
	if code != exitFailure || strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "ignored") ||
		!strings.Contains(stderr, filepath.Join(z.home, "config.json")) || !strings.Contains(stderr, "fix or remove it") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "--sandbox", "off", "-p", "hi")...)
	if code != 0 || stdout != "ok\n" || !strings.Contains(stderr, "(ignored: --sandbox decides the sandbox)") {
		t.Errorf("with --sandbox: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	if len(srv.Requests()) != 1 {
		t.Errorf("%d requests, want the one run with --sandbox", len(srv.Requests()))
	}
}
