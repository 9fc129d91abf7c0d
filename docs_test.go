package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The docs' examples, checked against what the real binary does.

// docSection is the text of a doc from the line that starts with heading
// to the next heading of its level or higher.
func docSection(t *testing.T, file, heading string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no %q", file, heading)
	}
	level := heading[:strings.IndexByte(heading, ' ')+1]
	for i := 1; i < len(level); i++ {
		rest, _, _ = strings.Cut(rest, "\n"+level[:i]+" ")
	}
	return rest
}

// TestEventsDocMatchesRealEvents runs the conversation of docs/events.md's
// example and checks each documented line, in order, against an event of
// the real stream: the same fields with the same values, but for the times
// (…) and the text of deltas, which the provider splits as it likes. Every
// event type of the table is one zot has, and the other way round.
func TestEventsDocMatchesRealEvents(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	_, example, _ := strings.Cut(string(doc), "One prompt produces, for example")
	_, example, _ = strings.Cut(example, "```\n")
	example, _, _ = strings.Cut(example, "```")
	var documented []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(example), "\n") {
		if line == "…" {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(strings.ReplaceAll(line, "{…}", `"…"`)), &ev); err != nil {
			t.Fatalf("docs/events.md: %q is not JSON: %v", line, err)
		}
		documented = append(documented, ev)
	}

	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "echo hello"}),
		replayStep{Events: anthropicEvents(gen{Text: "It said hello."})})
	stdout, stderr, code := newZotRun(t).run(append(anthropicFlags(srv), "--json", "say hello")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var real []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("bad event %q: %v", sc.Text(), err)
		}
		real = append(real, ev)
	}
	at := 0
	for _, want := range documented {
		for at < len(real) && real[at]["type"] != want["type"] {
			at++
		}
		if at == len(real) {
			t.Fatalf("docs/events.md shows %v where zot emits no %v event (in order):\n%s", want, want["type"], stdout)
		}
		got := real[at]
		at++
		if !reflect.DeepEqual(sortedKeys(got), sortedKeys(want)) {
			t.Errorf("%v: docs/events.md shows fields %v, zot emits %v", want["type"], sortedKeys(want), sortedKeys(got))
		}
		for k, v := range want {
			if v == "…" || k == "time" || k == "delta" {
				continue
			}
			if !reflect.DeepEqual(got[k], v) {
				t.Errorf("%v: docs/events.md shows %s %#v, zot emits %#v", want["type"], k, v, got[k])
			}
		}
	}

	// The table of types against the EventType constants.
	source, err := os.ReadFile("messages.go")
	if err != nil {
		t.Fatal(err)
	}
	var constants, table []string
	for _, m := range regexp.MustCompile(`(?m)^\s+Event\w+\s+EventType = "(\w+)"`).FindAllStringSubmatch(string(source), -1) {
		constants = append(constants, m[1])
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `(\\w+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		if m[1] != "type" { // the header
			table = append(table, m[1])
		}
	}
	slices.Sort(constants)
	slices.Sort(table)
	if len(constants) < 15 || !slices.Equal(constants, table) {
		t.Errorf("docs/events.md's table lists %v; messages.go has %v", table, constants)
	}
}

// TestToolsDocListsEveryTool: docs/tools.md has a section for each tool
// the model gets by default and says how many there are.
func TestToolsDocListsEveryTool(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("docs/tools.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range append(BuiltinTools(NewToolEnv(t.TempDir(), false)), SkillTool(nil)) {
		names = append(names, tool.Name())
		if !regexp.MustCompile("(?m)^## " + tool.Name() + " `\\{").Match(doc) {
			t.Errorf("docs/tools.md has no section ## %s `{…}`", tool.Name())
		}
	}
	words := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
	count := words[len(names)]
	if !strings.Contains(string(doc), "The model gets "+count+" tools") {
		t.Errorf("docs/tools.md does not say the model gets %s tools (%v)", count, names)
	}
	for _, file := range []string{"README.md", "docs/tools.md", "docs/usage.md"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range words {
			if w != count && strings.Contains(string(b), " "+w+" tools") {
				t.Errorf("%s speaks of %s tools; there are %d: %v", file, w, len(names), names)
			}
		}
		for _, n := range names {
			if !strings.Contains(string(b), "`"+n+"`") {
				t.Errorf("%s does not name the tool `%s`", file, n)
			}
		}
	}
}

// TestUsageDocListsWhatZotKeeps runs zot with a session, a bash call (the
// audit log), an extension and an MCP server, and checks that every file
// it creates in $ZOT_HOME is one docs/usage.md's "Where zot keeps things"
// lists: the top-level name, and in logs/ the file pattern.
func TestUsageDocListsWhatZotKeeps(t *testing.T) {
	t.Parallel()
	section := docSection(t, "docs/usage.md", "## Where zot keeps things")
	_, listing, _ := strings.Cut(section, "```\n")
	listing, _, _ = strings.Cut(listing, "```")
	entries := map[string]string{} // name → its description
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		name, desc, _ := strings.Cut(line, " ")
		entries[strings.TrimSuffix(name, "/")] = desc
	}
	var logPatterns []string
	for _, m := range regexp.MustCompile(`[\w<>-]+\.[\w.]+`).FindAllString(entries["logs"], -1) {
		logPatterns = append(logPatterns, regexp.MustCompile(`<\w+>`).ReplaceAllString(m, "*"))
	}

	z := newZotRun(t)
	ext := scriptedExt(t, "notes", obj{"frames": []obj{{"type": "register_tool", "name": "note", "description": "d", "schema": obj{"type": "object"}}}})
	writeFile(t, filepath.Join(z.cwd, "servers.json"), fmt.Sprintf(`{"mcpServers": {"fake": %s}}`, fakeServer(t, "normal", t.TempDir(), "")), 0o644)
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "echo hi"}), replayStep{Events: anthropicEvents(gen{Text: "done"})})
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--ext", ext, "--no-mcp", "--mcp-config", "servers.json", "go")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var created []string // files and directories
	filepath.WalkDir(z.home, func(p string, d fs.DirEntry, err error) error {
		if rel, _ := filepath.Rel(z.home, p); err == nil && p != z.home {
			created = append(created, filepath.ToSlash(rel))
		}
		return nil
	})
	for _, want := range []string{"logs/audit.jsonl", "logs/ext-notes.log", "logs/ext-notes.state.json", "logs/mcp-fake.log", "ext-data/notes"} {
		if !slices.Contains(created, want) {
			t.Errorf("the run did not create %s (it created %v)", want, created)
		}
	}
	if !slices.ContainsFunc(created, func(p string) bool { return strings.HasPrefix(p, "sessions/") }) {
		t.Errorf("the run saved no session: %v", created)
	}
	for _, p := range created {
		top, rest, inDir := strings.Cut(p, "/")
		if _, ok := entries[top]; !ok {
			t.Errorf("zot created %s; docs/usage.md does not list %s", p, top)
			continue
		}
		if inDir && top == "logs" && !slices.ContainsFunc(logPatterns, func(pat string) bool { ok, _ := path.Match(pat, rest); return ok }) {
			t.Errorf("zot created %s; docs/usage.md lists logs/ as %v", p, logPatterns)
		}
	}
}

// docs/models.md's table of what zot's own prompt costs a model stays
// within 10% of the bytes this build sends (bench/prompt-size.sh measures
// the tokens beside them against a live server).
func TestModelsDocPromptSizes(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("docs/models.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| (default \\(.*\\)|`--tools ([a-z,]+)`) \\| ([0-9,]+) bytes \\| ([0-9,]+) bytes \\| ([0-9,]+) \\|$")
	rows := row.FindAllStringSubmatch(string(doc), -1)
	if len(rows) != 3 {
		t.Fatalf("docs/models.md: %d rows of prompt sizes, want 3", len(rows))
	}
	number := func(s string) int { n, _ := strconv.Atoi(strings.ReplaceAll(s, ",", "")); return n }
	for _, r := range rows {
		srv := startReplay(t, replayStep{Events: openaiEvents(gen{Text: "ok"})})
		args := []string{"-p", "--provider", "openai", "--base-url", srv.URL + "/v1", "--model", "local", "--no-session"}
		if r[2] != "" {
			args = append(args, "--tools", r[2])
		}
		if _, stderr, code := newZotRun(t).run(append(args, "hi")...); code != 0 {
			t.Fatalf("%s: exit %d: %s", r[1], code, stderr)
		}
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
			Tools []any `json:"tools"`
		}
		json.Unmarshal(srv.Requests()[0].Body, &body)
		var tools bytes.Buffer
		enc := json.NewEncoder(&tools)
		enc.SetEscapeHTML(false)
		enc.Encode(body.Tools)
		system, defs := len(body.Messages[0].Content), tools.Len()-1
		within := func(got, want int) bool { return got*10 >= want*9 && got*10 <= want*11 }
		if !within(system+defs, number(r[3])+number(r[4])) || !within(defs, number(r[4])) {
			t.Errorf("docs/models.md says %s sends %s + %s bytes; this build sends %d + %d: run bench/prompt-size.sh against a server and update the row", r[1], r[3], r[4], system, defs)
		}
	}
}
