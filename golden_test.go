package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// updateGolden, -update, rewrites the golden files instead of comparing
// with them: go test -run TestGolden -update ., then read the diff before
// committing it.
var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden with what the tests produce")

// checkGolden compares got with testdata/name.golden, the output a user or
// a program reads and relies on; with -update it writes got there instead.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run '%s' -update writes it)", err, t.Name())
	}
	if want := string(b); got != want {
		t.Errorf("%s differs from what zot produced; %s\n(if the change is meant, go test -run '%s' -update and commit the diff)\ngot:\n%s",
			path, firstDifference(got, want), t.Name(), got)
	}
}

// firstDifference names the first line where got and want part.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("line %d:\n  got:  %q\n  want: %q", i+1, gl, wl)
		}
	}
	return "they differ"
}

// normalise replaces what changes from run to run (the temporary
// directories of a test, this checkout's path) with fixed names, longest
// first so a directory inside another keeps its own name.
func normalise(s string, names map[string]string) string {
	olds := make([]string, 0, len(names))
	for old := range names {
		if old != "" {
			olds = append(olds, old)
		}
	}
	sort.Slice(olds, func(i, j int) bool { return len(olds[i]) > len(olds[j]) })
	for _, old := range olds {
		s = strings.ReplaceAll(s, old, names[old])
	}
	return s
}

// referenceConversation is the conversation the golden files show: the
// model thinks, says what it will do, writes a file, runs a command on it
// (one line of output, so one tool_progress however slow the machine)
// and answers in markdown, each turn a stream shaped like the recorded
// ones (testdata/sse).
func referenceConversation() []replayStep {
	return []replayStep{
		{Events: anthropicEvents(
			gen{Thinking: "The user wants notes; write them, then count them."},
			gen{Text: "I will write the notes first."},
			gen{ToolID: "toolu_01", ToolName: "write", ToolArgs: `{"path":"notes.txt","content":"alpha\nbeta\n"}`})},
		{Events: anthropicEvents(gen{ToolID: "toolu_02", ToolName: "bash", ToolArgs: `{"command":"wc -l < notes.txt"}`})},
		{Events: anthropicEvents(gen{Text: "Done: **notes.txt** has 2 lines:\n\n- `alpha`\n- `beta`"})},
	}
}

// jsonTimes are the times of --json events, which change with each run.
var jsonTimes = regexp.MustCompile(`"time":"[^"]*"`)

// TestGoldenJSONEvents keeps the --json event stream of whole
// conversations, through the real binary: the reference conversation, and
// one whose both turns are recorded from the real API, a call to a tool
// zot does not have and the model's answer to the refusal.
func TestGoldenJSONEvents(t *testing.T) {
	t.Parallel()
	for name, steps := range map[string][]replayStep{
		"json_reference": referenceConversation(),
		"json_recorded": {fixtureStep(t, "anthropic_recorded_text_then_tool_use.sse"),
			fixtureStep(t, "anthropic_recorded_final_text_after_tool_result.sse")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := startReplay(t, steps...)
			z := newZotRun(t)
			stdout, stderr, code := z.run(append(anthropicFlags(srv), "--json", "make", "notes")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			got := normalise(jsonTimes.ReplaceAllString(stdout, `"time":"TIME"`), map[string]string{z.cwd: "$CWD", z.home: "$ZOT_HOME"})
			checkGolden(t, name, got)
		})
	}
}
