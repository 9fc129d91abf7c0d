package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var sessionT0 = time.Date(2026, 11, 22, 10, 45, 12, 0, time.UTC)

func userMsg(text string, i int) Message {
	return Message{Role: "user", Content: []Block{TextBlock(text)}, Time: sessionT0.Add(time.Duration(i) * time.Second)}
}

func assistantMsg(text string, i int, calls ...Block) Message {
	content := []Block{TextBlock(text)}
	return Message{Role: "assistant", Content: append(content, calls...), Time: sessionT0.Add(time.Duration(i) * time.Second)}
}

func callBlock(id, args string) Block {
	return Block{Type: "tool_call", ID: id, Name: "bash", Args: json.RawMessage(args)}
}

func resultsMsg(i int, ids ...string) Message {
	m := Message{Role: "user", Time: sessionT0.Add(time.Duration(i) * time.Second)}
	for _, id := range ids {
		m.Content = append(m.Content, Block{Type: "tool_result", CallID: id, Content: []Block{TextBlock("ok " + id)}})
	}
	return m
}

// sampleTranscript is a prompt, a tool round trip and an answer.
func sampleTranscript() []Message {
	return []Message{
		userMsg("fix the failing test", 0),
		assistantMsg("Let me look.", 1, callBlock("c1", `{"command":"go test ./..."}`)),
		resultsMsg(2, "c1"),
		assistantMsg("Fixed it.", 3),
	}
}

// newTestSession writes msgs to a new session and closes it.
func newTestSession(t *testing.T, home, cwd string, msgs []Message, usage ...Usage) string {
	t.Helper()
	s := NewSession(home, cwd, "anthropic", "claude-sonnet-4-5")
	for _, m := range msgs {
		if err := s.Append(m); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range usage {
		if err := s.AppendUsage(u); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return s.Path
}

func openTestSession(t *testing.T, path string) (*Session, *LoadedSession) {
	t.Helper()
	s, loaded, err := OpenSession(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, loaded
}

// loadTestSession reads a session as OpenSession does and closes it, so
// the file is free for the next opener.
func loadTestSession(t *testing.T, path string) *LoadedSession {
	t.Helper()
	s, loaded, err := OpenSession(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return loaded
}

// scanTestSession reads a session file the way a lister does, without
// opening it for appends (and so without its lock).
func scanTestSession(t *testing.T, path string) *sessionScan {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc, err := scanSession(path, f)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func appendRaw(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func sameMessages(t *testing.T, got, want []Message) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("messages differ\ngot:  %s\nwant: %s", g, w)
	}
}

func repairsMention(t *testing.T, repairs []string, parts ...string) {
	t.Helper()
	for _, r := range repairs {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(r, p)
		}
		if ok {
			return
		}
	}
	t.Fatalf("no repair mentions %q; repairs: %q", parts, repairs)
}

func TestSessionRoundTrip(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	msgs := append(sampleTranscript(),
		userMsg("and the <html> & stuff", 4),
		// Arguments cut off mid-stream, and arguments that are a JSON string,
		// come back byte for byte.
		assistantMsg("", 5, callBlock("c2", `{"command":"ls -l`), callBlock("c3", `"just a string"`)),
		resultsMsg(6, "c2", "c3"),
	)
	s := NewSession(home, cwd, "anthropic", "claude-sonnet-4-5")
	for i, m := range msgs {
		if err := s.Append(m); err != nil {
			t.Fatal(err)
		}
		if m.Role == "assistant" {
			if err := s.AppendUsage(Usage{Input: 100 * i, Output: 10, CacheRead: 5, CacheWrite: 1, CostUSD: 0.25}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.SetModel("claude-opus-4"); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Append(userMsg("late", 9)); err == nil || !strings.Contains(err.Error(), "append session "+s.Path) {
		t.Fatalf("Append after Close = %v, want an error naming the session", err)
	}

	dir := sessionDir(home, cwd)
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(filepath.Base(dir)) {
		t.Errorf("session dir %s is not named by a 16-hex-digit hash", dir)
	}
	if !regexp.MustCompile(`^\d{8}T\d{6}Z-[0-9a-f]{8}\.jsonl$`).MatchString(filepath.Base(s.Path)) || filepath.Dir(s.Path) != dir {
		t.Errorf("session path %s is not <dir>/<timestamp>-<id>.jsonl", s.Path)
	}
	if st, _ := os.Stat(s.Path); st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", st.Mode().Perm())
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", st.Mode().Perm())
	}

	loaded := loadTestSession(t, s.Path)
	sameMessages(t, loaded.Messages, msgs)
	want := Usage{Input: 100 * (1 + 3 + 5), Output: 30, CacheRead: 15, CacheWrite: 3, CostUSD: 0.75}
	if loaded.Usage != want {
		t.Errorf("usage %+v, want %+v", loaded.Usage, want)
	}
	if len(loaded.Repairs) > 0 {
		t.Errorf("clean session reported repairs: %q", loaded.Repairs)
	}
	m := loaded.Meta
	if m.Version != 1 || m.ID != s.Meta.ID || m.Cwd != cwd || m.Provider != "anthropic" || m.Model != "claude-opus-4" || !m.Created.Equal(s.Meta.Created) {
		t.Errorf("meta %+v does not match the session's %+v (model should be the latest)", m, s.Meta)
	}
}

// TestSessionFileFormat pins the rows as written: a reader in any language
// can rely on exactly this.
func TestSessionFileFormat(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	s := NewSession(home, "/src/project", "openai", "gpt-5")
	s.Meta.ID, s.Meta.Created = "0123abcd", sessionT0
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Append(userMsg("hi", 0)))
	must(s.AppendUsage(Usage{Input: 12, Output: 3, CostUSD: 0.5}))
	must(s.SetModel("gpt-5-mini"))
	must(s.Reset([]Message{userMsg("summary", 1)}))
	must(s.Reset(nil))
	must(s.Close())
	got, err := os.ReadFile(s.Path)
	must(err)
	want := `{"type":"meta","version":1,"id":"0123abcd","cwd":"/src/project","provider":"openai","model":"gpt-5","created":"2026-11-22T10:45:12Z"}
{"type":"message","message":{"role":"user","content":[{"type":"text","text":"hi"}],"time":"2026-11-22T10:45:12Z"}}
{"type":"usage","usage":{"input":12,"output":3,"cache_read":0,"cache_write":0,"cost_usd":0.5}}
{"type":"model","model":"gpt-5-mini"}
{"type":"reset","messages":[{"role":"user","content":[{"type":"text","text":"summary"}],"time":"2026-11-22T10:45:13Z"}]}
{"type":"reset","messages":[]}
`
	if string(got) != want {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
}

// TestSessionReadsForwardCompatibleRows loads a hand-written version 1 file
// with fields and a row type this zot does not know.
func TestSessionReadsForwardCompatibleRows(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("testdata", "sessions", "v1-extras.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	loaded := loadTestSession(t, path)
	sameMessages(t, loaded.Messages, []Message{userMsg("hello", 0), assistantMsg("hi there", 1)})
	if loaded.Usage.Input != 7 || loaded.Meta.Model != "m2" || loaded.Meta.ID != "feedbeef" {
		t.Errorf("usage %+v meta %+v", loaded.Usage, loaded.Meta)
	}
	if len(loaded.Repairs) != 1 {
		t.Fatalf("repairs %q, want one for the unknown row", loaded.Repairs)
	}
	repairsMention(t, loaded.Repairs, "line 4", `unknown row type "bookmark"`, "skipped")
	if got, _ := os.ReadFile(path); !bytes.Equal(got, src) {
		t.Error("loading a file with unknown rows changed it")
	}
}

func TestSessionResetRowsReplaceTheTranscript(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	msgs := sampleTranscript()
	s := NewSession(home, cwd, "anthropic", "m")
	for _, m := range msgs {
		s.Append(m)
	}
	summary := userMsg("[Summary of the earlier conversation]\n\nfixed a test", 10)
	kept := []Message{summary, msgs[3]}
	if err := s.Reset(kept); err != nil {
		t.Fatal(err)
	}
	next := userMsg("now the docs", 11)
	s.Append(next)
	s.AppendUsage(Usage{Input: 1, CostUSD: 0.1})
	s.Close()

	loaded := loadTestSession(t, s.Path)
	sameMessages(t, loaded.Messages, []Message{summary, msgs[3], next})
	if loaded.Usage.CostUSD != 0.1 {
		t.Errorf("usage %+v: resets must not drop usage", loaded.Usage)
	}

	// /clear, then a fresh start.
	s2, _ := openTestSession(t, s.Path)
	if err := s2.Reset(nil); err != nil {
		t.Fatal(err)
	}
	again := userMsg("start over", 12)
	s2.Append(again)
	s2.Close()
	_, loaded = openTestSession(t, s.Path)
	sameMessages(t, loaded.Messages, []Message{again})
}

func TestSessionWithoutPromptLeavesNoFile(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	s := NewSession(home, cwd, "anthropic", "m")
	for _, err := range []error{s.AppendUsage(Usage{Input: 3, CostUSD: 0.2}), s.SetModel("m2"), s.Reset(nil), s.Sync(), s.Close()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "sessions")); !os.IsNotExist(err) {
		t.Fatalf("a session without a prompt left %s behind (stat: %v)", filepath.Join(home, "sessions"), err)
	}

	// Usage recorded before the first message is not lost once it comes,
	// nor is a model switched to before it.
	s = NewSession(home, cwd, "anthropic", "m")
	s.AppendUsage(Usage{Input: 3, CostUSD: 0.2})
	s.SetModel("m2")
	s.Append(userMsg("hi", 0))
	s.Close()
	loaded := loadTestSession(t, s.Path)
	if loaded.Usage.Input != 3 || loaded.Meta.Model != "m2" {
		t.Errorf("usage %+v model %q, want the pending usage and m2", loaded.Usage, loaded.Meta.Model)
	}
}

func TestSessionCreateErrorNamesTheFile(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "not-a-dir")
	os.WriteFile(home, nil, 0o600)
	s := NewSession(home, "/x", "anthropic", "m")
	err := s.Append(userMsg("hi", 0))
	if err == nil || !strings.Contains(err.Error(), "append session "+s.Path+": ") {
		t.Fatalf("err = %v, want it to wrap the operation and path", err)
	}
}

func TestSessionTornLastLineIsRepaired(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, tail string
		truncated  bool
		line       string
	}{
		{"cut off without newline", `{"type":"message","message":{"role":"assi`, true, "line 6: cut off"},
		{"garbage with newline", "{\"type\":\"usage\",\"usa\x00\n", true, "line 6: not valid JSON"},
		{"several torn lines", "{\"type\":\n{\"ty", true, "line 7: cut off"},
		{"whole row without newline", `{"type":"usage","usage":{"input":5}}`, false, "line 6: the last line was whole but had no newline"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msgs := sampleTranscript()
			path := newTestSession(t, t.TempDir(), t.TempDir(), msgs)
			good := fileSize(t, path)
			appendRaw(t, path, tc.tail)

			s, loaded, err := OpenSession(path)
			if err != nil {
				t.Fatal(err)
			}
			sameMessages(t, loaded.Messages, msgs)
			repairsMention(t, loaded.Repairs, tc.line)
			if tc.truncated {
				repairsMention(t, loaded.Repairs, fmt.Sprintf("truncated the file from %d to %d bytes", good+int64(len(tc.tail)), good))
				if got := fileSize(t, path); got != good {
					t.Errorf("file is %d bytes after repair, want %d", got, good)
				}
			}

			// Appends after the repair land on whole lines; the next load is clean.
			more := userMsg("after the crash", 20)
			if err := s.Append(more); err != nil {
				t.Fatal(err)
			}
			s.Close()
			_, loaded = openTestSession(t, path)
			sameMessages(t, loaded.Messages, append(msgs, more))
			if len(loaded.Repairs) > 0 {
				t.Errorf("reload after repair reported %q", loaded.Repairs)
			}
		})
	}
}

func TestSessionSkipsInvalidLinesInTheMiddle(t *testing.T) {
	t.Parallel()
	msgs := sampleTranscript()
	path := newTestSession(t, t.TempDir(), t.TempDir(), msgs[:2])
	appendRaw(t, path, "this is not json\n"+
		`{"type":"message","message":"not an object"}`+"\n"+
		`{"type":"message"}`+"\n"+
		`{"type":"message","message":{"role":"user","content":[{"type":"tool_result","call_id":"c1","content":[{"type":"text","text":"ok c1"}],"future_field":1}],"time":"2026-11-22T10:45:14Z","mood":"calm"}}`+"\n"+
		"\n")
	more, _, err := OpenSession(path)
	if err != nil {
		t.Fatal(err)
	}
	more.Append(msgs[3])
	more.Close()
	before := fileSize(t, path)

	loaded := loadTestSession(t, path)
	sameMessages(t, loaded.Messages, msgs)
	repairsMention(t, loaded.Repairs, "line 4: not valid JSON; skipped it")
	repairsMention(t, loaded.Repairs, "line 5", "skipped it")
	repairsMention(t, loaded.Repairs, "line 6: message row without a message; skipped it")
	if len(loaded.Repairs) != 3 {
		t.Errorf("repairs %q, want exactly the three bad lines", loaded.Repairs)
	}
	if fileSize(t, path) != before {
		t.Error("skipping lines in the middle changed the file")
	}
}

func TestSessionRepairsOrphanedToolCalls(t *testing.T) {
	t.Parallel()
	msgs := sampleTranscript()
	orphan := assistantMsg("Running both.", 4, callBlock("c7", `{}`), callBlock("c8", `{}`))
	cases := []struct {
		name  string
		file  []Message
		want  []Message
		notes []string
	}{{
		name: "crash while the tools ran",
		file: append(append([]Message(nil), msgs...), orphan),
		want: append(append([]Message(nil), msgs...), orphan,
			Message{Role: "user", Content: []Block{interruptedResult("c7"), interruptedResult("c8")}, Time: orphan.Time}),
		notes: []string{"line 6: tool calls without results (c7, c8); answered them as interrupted (they may have run)"},
	}, {
		name: "a prompt followed the calls",
		file: []Message{msgs[0], orphan, userMsg("hello?", 5), assistantMsg("hi", 6)},
		want: []Message{msgs[0], orphan,
			{Role: "user", Content: []Block{interruptedResult("c7"), interruptedResult("c8")}, Time: orphan.Time},
			userMsg("hello?", 5), assistantMsg("hi", 6)},
		notes: []string{"line 3: tool calls without results (c7, c8)"},
	}, {
		name: "some results missing",
		file: []Message{msgs[0], orphan, resultsMsg(5, "c8"), assistantMsg("done", 6)},
		want: []Message{msgs[0], orphan,
			{Role: "user", Content: []Block{resultsMsg(5, "c8").Content[0], interruptedResult("c7")}, Time: sessionT0.Add(5 * time.Second)},
			assistantMsg("done", 6)},
		notes: []string{"line 3: tool calls without results (c7)"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := newTestSession(t, t.TempDir(), t.TempDir(), tc.file)
			loaded := loadTestSession(t, path)
			sameMessages(t, loaded.Messages, tc.want)
			for _, n := range tc.notes {
				repairsMention(t, loaded.Repairs, n)
			}
			// The repair was written to the file: a second load finds
			// nothing to repair and the same transcript.
			again := loadTestSession(t, path)
			sameMessages(t, again.Messages, tc.want)
			if len(again.Repairs) > 0 {
				t.Errorf("second load repaired again: %q", again.Repairs)
			}
		})
	}
}

func TestSessionRefusesNewerFormat(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "new.jsonl")
	os.WriteFile(path, []byte(`{"type":"meta","version":2,"id":"x","shiny":true}`+"\n"+`{"type":"hologram"}`+"\n"), 0o600)
	_, _, err := OpenSession(path)
	want := fmt.Sprintf("session %s was written by a newer zot (format 2); upgrade zot to open it", path)
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestSessionRefusesFilesThatAreNotSessions(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"empty":            "",
		"text":             "# notes\nhello\n",
		"no meta row":      `{"type":"message","message":{"role":"user","content":[]}}` + "\n",
		"other JSON":       `{"name":"package.json"}` + "\n",
		"torn meta":        `{"type":"meta","vers`,
		"meta without ver": `{"type":"meta","id":"x"}` + "\n",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.jsonl")
			os.WriteFile(path, []byte(content), 0o600)
			_, _, err := OpenSession(path)
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("err = %v, want a refusal naming %s", err, path)
			}
			if got, _ := os.ReadFile(path); string(got) != content {
				t.Error("refusing the file changed it")
			}
		})
	}
	path := filepath.Join(t.TempDir(), "missing.jsonl")
	if _, _, err := OpenSession(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want a not-exist error", err)
	}
}

func TestListSessionsNewestFirst(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	if list, err := ListSessions(home, cwd); err != nil || len(list) != 0 {
		t.Fatalf("no sessions yet: %v, %v", list, err)
	}

	old := newTestSession(t, home, cwd, []Message{userMsg("old work", 0), assistantMsg("ok", 1)}, Usage{CostUSD: 0.01})
	s := NewSession(home, cwd, "anthropic", "claude-sonnet-4-5")
	s.Append(userMsg("  fix\tthe\nfailing test  ", 0))
	s.AppendUsage(Usage{CostUSD: 0.5})
	s.AppendUsage(Usage{CostUSD: 0.25})
	s.SetModel("claude-opus-4")
	s.Append(assistantMsg("done", 1))
	s.Close()
	mid := s.Path
	newest := newTestSession(t, home, cwd, []Message{userMsg("latest", 0)})
	newTestSession(t, home, t.TempDir(), []Message{userMsg("another project", 0)})
	os.WriteFile(filepath.Join(sessionDir(home, cwd), "junk.jsonl"), []byte("nope\n"), 0o600)

	for i, p := range []string{old, mid, newest} {
		mt := sessionT0.Add(time.Duration(i) * time.Hour)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	list, err := ListSessions(home, cwd)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, info := range list {
		paths = append(paths, info.Path)
	}
	if !reflect.DeepEqual(paths, []string{newest, mid, old}) {
		t.Fatalf("order %q, want newest, mid, old", paths)
	}
	got := list[1]
	if got.Messages != 2 || got.CostUSD != 0.75 || got.FirstPrompt != "  fix\tthe\nfailing test  " ||
		got.Model != "claude-opus-4" || got.Meta.Model != "claude-sonnet-4-5" || !got.Updated.Equal(sessionT0.Add(time.Hour)) {
		t.Errorf("info %+v", got)
	}
}

func TestLatestSession(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	_, err := LatestSession(home, cwd)
	if err == nil || !strings.Contains(err.Error(), "no session to continue in "+cwd) {
		t.Fatalf("err = %v, want a clear error naming the cwd", err)
	}

	a := newTestSession(t, home, cwd, []Message{userMsg("a", 0)})
	b := newTestSession(t, home, cwd, []Message{userMsg("b", 0)})
	junk := filepath.Join(sessionDir(home, cwd), "zz.jsonl")
	os.WriteFile(junk, []byte("garbage\n"), 0o600)
	for i, p := range []string{b, a, junk} {
		mt := sessionT0.Add(time.Duration(i) * time.Minute)
		os.Chtimes(p, mt, mt)
	}
	got, err := LatestSession(home, cwd)
	if err != nil || got != a {
		t.Fatalf("LatestSession = %q, %v; want %q (the newest real session)", got, err, a)
	}

	// The newest session, from a newer zot: --continue says so instead of
	// quietly continuing an older one, and the --resume list shows it.
	future := filepath.Join(sessionDir(home, cwd), "future.jsonl")
	os.WriteFile(future, []byte(`{"type":"meta","version":99,"id":"f","cwd":"x"}`+"\n"), 0o600)
	mt := sessionT0.Add(time.Hour)
	os.Chtimes(future, mt, mt)
	if _, err := LatestSession(home, cwd); err == nil || !strings.Contains(err.Error(), "written by a newer zot (format 99)") {
		t.Errorf("LatestSession with a newer newest session: err = %v", err)
	}
	list, err := ListSessions(home, cwd)
	if err != nil || len(list) != 3 || list[0].Path != future || !strings.Contains(FormatSessionList(list, sessionT0), "newer zot, format 99") {
		t.Errorf("ListSessions = %+v, %v", list, err)
	}
}

// The context gauge after a resume is the size of the last call, as it was
// when the session stopped; a reset (compaction, /clear) forgets it, as
// the agent does.
func TestOpenSessionRestoresTheLastContextSize(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	path := newTestSession(t, home, cwd, sampleTranscript(), Usage{Input: 1000, Output: 10}, Usage{Input: 50000, CacheRead: 10000, Output: 20})
	s, loaded, err := OpenSession(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.LastContext != 60000 {
		t.Errorf("LastContext = %d, want 60000", loaded.LastContext)
	}
	a := NewAgent(nil, "claude-sonnet-4-5", nil)
	if err := a.Restore(loaded); err != nil {
		t.Fatal(err)
	}
	if total, last := a.Totals(); last != 60000 || total.Input != 51000 || len(a.Messages()) != len(sampleTranscript()) {
		t.Errorf("restored totals %+v, last context %d, %d messages", total, last, len(a.Messages()))
	}
	if err := s.Reset([]Message{userMsg("[Summary of the earlier conversation]", 9)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, loaded, err = OpenSession(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.LastContext != 0 {
		t.Errorf("after a reset LastContext = %d, want 0", loaded.LastContext)
	}
}

func TestSessionFork(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	msgs := append(sampleTranscript(), userMsg("now the docs", 4), assistantMsg("ok", 5))
	path := newTestSession(t, home, cwd, msgs)
	parent, loaded := openTestSession(t, path)

	child, err := parent.Fork(4, loaded.Messages)
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	if child.Meta.Parent != path || child.Meta.ForkedAt != 4 || child.Meta.ID == parent.Meta.ID || child.Path == path {
		t.Errorf("child meta %+v path %s", child.Meta, child.Path)
	}
	if filepath.Dir(child.Path) != filepath.Dir(path) {
		t.Errorf("fork at %s, want it beside its parent", child.Path)
	}
	// Written at once: a reader sees it before the child records anything.
	fromDisk := scanTestSession(t, child.Path)
	sameMessages(t, fromDisk.msgs, msgs[:4])
	if fromDisk.meta.Parent != path || fromDisk.meta.ForkedAt != 4 {
		t.Errorf("meta on disk %+v", fromDisk.meta)
	}
	// The child goes on by itself; the parent is untouched.
	child.Append(userMsg("a different road", 9))
	sameMessages(t, scanTestSession(t, path).msgs, msgs)

	if whole, err := parent.Fork(len(msgs), msgs); err != nil {
		t.Errorf("fork keeping everything: %v", err)
	} else {
		whole.Close()
	}
	if empty, err := parent.Fork(0, msgs); err != nil {
		t.Errorf("fork before the first prompt: %v", err)
	} else {
		empty.Close()
	}
	for _, at := range []int{1, 2, 3, 5, -1, len(msgs) + 1} {
		if _, err := parent.Fork(at, msgs); err == nil {
			t.Errorf("Fork(%d) cut between a call and its result (or out of range) without an error", at)
		}
	}
	if _, err := parent.Fork(2, msgs[:2]); err == nil || !strings.Contains(err.Error(), "without results") {
		t.Errorf("fork ending on an orphaned call: %v", err)
	}
}

func TestSessionConcurrentAppendWritesWholeLines(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	s := NewSession(home, cwd, "anthropic", "m")
	const writers, each = 8, 40
	big := strings.Repeat("x", 20<<10)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) { // one writer; exits after its appends
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := s.Append(userMsg(fmt.Sprintf("%d/%d %s", w, i, big), i)); err != nil {
					t.Error(err)
				}
				s.AppendUsage(Usage{Input: 1})
				if i%10 == 0 {
					s.Sync()
				}
			}
		}(w)
	}
	wg.Wait()
	s.Close()

	f, _ := os.Open(s.Path)
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	lines := 0
	for {
		line, err := r.ReadBytes('\n')
		if len(line) == 0 {
			break
		}
		lines++
		if !json.Valid(line) || line[len(line)-1] != '\n' {
			t.Fatalf("line %d is not a whole row", lines)
		}
		if err != nil {
			break
		}
	}
	if want := 1 + 2*writers*each; lines != want {
		t.Errorf("%d lines, want %d", lines, want)
	}
	loaded := loadTestSession(t, s.Path)
	if len(loaded.Messages) != writers*each || loaded.Usage.Input != writers*each || len(loaded.Repairs) > 0 {
		t.Errorf("%d messages, usage %+v, repairs %q", len(loaded.Messages), loaded.Usage, loaded.Repairs)
	}
}

func TestFormatSessionList(t *testing.T) {
	t.Parallel()
	now := sessionT0.Add(24 * time.Hour)
	list := []SessionInfo{
		{Updated: sessionT0, Meta: SessionMeta{Model: "old"}, Model: "claude-sonnet-4-5", Messages: 12, CostUSD: 0.0123, FirstPrompt: "fix the failing test"},
		{Updated: sessionT0.Add(-time.Hour), Meta: SessionMeta{Model: "gpt-5"}, Messages: 1, FirstPrompt: "\x1b[31mred\x1b[0m\ttabs\nand lines \u202eand a very long prompt that goes on and on past sixty runes of text"},
		{Updated: sessionT0.Add(-2 * time.Hour), Model: "m", Messages: 0},
	}
	got := FormatSessionList(list, now)
	want := "" +
		"1) 2026-11-22 10:45  claude-sonnet-4-5  12 msgs  $0.0123  fix the failing test\n" +
		"2) 2026-11-22 09:45  gpt-5                1 msg  $0.0000  red tabs and lines \uFFFDand a very long prompt that goes on and…\n" +
		"3) 2026-11-22 08:45  m                   0 msgs  $0.0000  (no prompt)\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if FormatSessionList(nil, now) != "" {
		t.Error("an empty list should render as nothing")
	}
	// Times are shown where the user is.
	tz := time.FixedZone("X", 2*3600)
	if got := FormatSessionList(list[:1], now.In(tz)); !strings.HasPrefix(got, "1) 2026-11-22 12:45 ") {
		t.Errorf("in +02:00: %q", got)
	}
}

// BenchmarkLoadSession10k loads a session of 10,000 realistic messages:
// prompts and answers of a few hundred bytes, tool calls and their results.
func BenchmarkLoadSession10k(b *testing.B) {
	home, cwd := b.TempDir(), b.TempDir()
	s := NewSession(home, cwd, "anthropic", "claude-sonnet-4-5")
	prose := strings.Repeat("The test fails because the parser drops the last token when the input ends without a newline. ", 4)
	output := strings.Repeat("ok  \tzot/internal/thing\t0.012s\n--- FAIL: TestParse (0.00s)\n", 6)
	for i := 0; i < 10000; {
		id := fmt.Sprintf("toolu_%06d", i)
		for _, m := range []Message{
			userMsg(fmt.Sprintf("step %d: %s", i, prose[:200]), i),
			assistantMsg(prose, i, Block{Type: "tool_call", ID: id, Name: "bash", Args: json.RawMessage(`{"command":"go test ./... -run TestParse -count=1 2>&1 | head -50"}`)}),
			{Role: "user", Time: sessionT0, Content: []Block{{Type: "tool_result", CallID: id, Content: []Block{TextBlock(output)}}}},
			assistantMsg(prose[:300], i),
		} {
			if i == 10000 {
				break
			}
			if err := s.Append(m); err != nil {
				b.Fatal(err)
			}
			if m.Role == "assistant" {
				s.AppendUsage(Usage{Input: 20000, Output: 300, CacheRead: 18000, CostUSD: 0.012})
			}
			i++
		}
	}
	s.Close()
	b.SetBytes(fileSize(b, s.Path))
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		ss, loaded, err := OpenSession(s.Path)
		if err != nil || len(loaded.Messages) != 10000 {
			b.Fatalf("%v, %d messages", err, len(loaded.Messages))
		}
		ss.Close()
	}
}
