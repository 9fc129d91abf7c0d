package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkCodingSessionTokens runs the built binary through one scripted
// coding session of 12 requests against a server that records what zot
// sends: reads of source files, a bash whose 30 KB test log ends with the
// summary, a bash with a 2 MB log, a turn with 12 parallel reads, edits.
// It reports the input tokens (bytes/4) of the whole session as sent, and
// as Anthropic would bill them with prompt caching (cache writes 1.25×,
// reads 0.1×, the model's minimum cacheable prefix, the 20-block lookback:
// simulateCaching). The "16KiB" figures cut every bash result in the
// recorded requests to 4 KiB of head and 12 KiB of tail, the budget of
// issue 26 §3, so the saving can be measured before and after that budget
// is the tool's own. Run it with bench/session-tokens.sh.
func BenchmarkCodingSessionTokens(b *testing.B) {
	var last sessionTokens
	for i := 0; i < b.N; i++ {
		last = runCodingSession(b)
	}
	if !last.summaryVisible {
		b.Errorf("the test summary at the end of the 30 KB log did not reach the model")
	}
	b.ReportMetric(float64(last.asSent.input), "input-tok")
	b.ReportMetric(last.asSent.cached, "cached-input-tok")
	b.ReportMetric(float64(last.budget16K.input), "input-tok-16KiB-bash")
	b.ReportMetric(last.budget16K.cached, "cached-input-tok-16KiB-bash")
	b.ReportMetric(float64(last.toolBytes), "tool-def-bytes")
	b.Logf("requests %d; tool definitions %d bytes; test summary visible: %v", last.requests, last.toolBytes, last.summaryVisible)
	b.Logf("input tokens as sent:        %7d, with caching %9.0f (read %d, written %d)", last.asSent.input, last.asSent.cached, last.asSent.read, last.asSent.written)
	b.Logf("input tokens, 16 KiB bash:   %7d, with caching %9.0f (read %d, written %d)", last.budget16K.input, last.budget16K.cached, last.budget16K.read, last.budget16K.written)
}

// sessionTokens is what one run of the scripted session cost.
type sessionTokens struct {
	requests       int
	toolBytes      int
	summaryVisible bool
	asSent         cacheBill
	budget16K      cacheBill
}

// testLogSummary ends the 30 KB test log; the model must see it.
const testLogSummary = "--- FAIL: TestDivideByZero (0.00s)\n    calc_test.go:41: Divide(1, 0) returned no error\nFAIL\nFAIL\tcalc\t0.004s\n"

func runCodingSession(b *testing.B) sessionTokens {
	b.Helper()
	project := b.TempDir()
	writeSessionProject(b, project)
	call := func(id, name, args string) gen { return gen{ToolID: id, ToolName: name, ToolArgs: args} }
	read := func(id, path string) gen { return call(id, "read", fmt.Sprintf(`{"path":%q}`, path)) }
	var parallel []gen
	for i := 1; i <= 12; i++ {
		parallel = append(parallel, read(fmt.Sprintf("toolu_p%02d", i), fmt.Sprintf("pkg/part%02d.go", i)))
	}
	script := [][]gen{
		{{Text: "I'll look at the code first."}, read("toolu_01", "calc.go")},
		{read("toolu_02", "calc_test.go")},
		{call("toolu_03", "bash", `{"command":"cat logs/test.log; exit 1"}`)},
		{call("toolu_04", "bash", `{"command":"cat logs/build.log"}`)},
		parallel,
		{call("toolu_06", "edit", `{"path":"calc.go","edits":[{"oldText":"\treturn a / b, nil // divide\n","newText":"\tif b == 0 {\n\t\treturn 0, errDivideByZero\n\t}\n\treturn a / b, nil\n"}]}`)},
		{call("toolu_07", "bash", `{"command":"echo 'ok  \tcalc\t0.003s'"}`)},
		{read("toolu_08", "README.md")},
		{call("toolu_09", "edit", `{"path":"README.md","edits":[{"oldText":"Divide panics on zero.","newText":"Divide returns errDivideByZero on zero."}]}`)},
		{call("toolu_10", "write", `{"path":"CHANGELOG.md","content":"# Changes\n\n- Divide returns an error instead of panicking when b is 0.\n"}`)},
		{call("toolu_11", "bash", `{"command":"wc -l calc.go README.md CHANGELOG.md"}`)},
		{{Text: "Fixed: Divide now returns errDivideByZero, the test passes, and the README says so."}},
	}
	var steps []replayStep
	for _, blocks := range script {
		steps = append(steps, replayStep{Events: anthropicEvents(blocks...)})
	}
	srv := startReplay(b, steps...)
	home := b.TempDir()
	cmd := exec.Command(zotBin(b), "-p", "--no-session", "--provider", "anthropic", "--model", "claude-sonnet-4-5",
		"--base-url", srv.URL, "--api-key", "k", "The tests fail. Find out why and fix it.")
	cmd.Dir = project
	cmd.Env = []string{"ZOT_HOME=" + home, "HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir()}
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("zot: %v\n%s", err, out)
	}
	reqs := srv.Requests()
	if len(reqs) != len(script) {
		b.Fatalf("zot sent %d requests, want %d", len(reqs), len(script))
	}
	var bodies [][]byte
	for _, r := range reqs {
		bodies = append(bodies, r.Body)
	}
	var first struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(bodies[0], &first); err != nil {
		b.Fatal(err)
	}
	out := sessionTokens{requests: len(bodies), toolBytes: len(first.Tools)}
	// The request after the test run holds its result.
	out.summaryVisible = strings.Contains(toolResultText(b, bodies[3], "toolu_03"), testLogSummary)
	out.asSent = simulateCaching(b, bodies, 1024)
	var budgeted [][]byte
	for _, body := range bodies {
		budgeted = append(budgeted, withBashBudget(b, body, 4<<10, 12<<10))
	}
	out.budget16K = simulateCaching(b, budgeted, 1024)
	if !strings.Contains(toolResultText(b, budgeted[3], "toolu_03"), testLogSummary) {
		b.Errorf("the 16 KiB budget cut the test summary")
	}
	return out
}

// writeSessionProject writes the small Go project the session works on.
func writeSessionProject(b *testing.B, dir string) {
	b.Helper()
	files := map[string]string{
		"calc.go":      goSource("calc", "Calc", 18) + "\nfunc Divide(a, b int) (int, error) {\n\treturn a / b, nil // divide\n}\n",
		"calc_test.go": goSource("calc", "TestCalc", 18),
		"README.md":    "# calc\n\nA small calculator library. Divide panics on zero.\n\n" + strings.Repeat("Usage notes for the calculator, one line each.\n", 20),
	}
	for i := 1; i <= 12; i++ {
		files[fmt.Sprintf("pkg/part%02d.go", i)] = goSource("pkg", fmt.Sprintf("Part%02d", i), 6)
	}
	var testLog strings.Builder
	for i := 0; testLog.Len() < 30000-len(testLogSummary); i++ {
		fmt.Fprintf(&testLog, "=== RUN   TestCase%04d\n--- PASS: TestCase%04d (0.00s)\n", i, i)
	}
	testLog.WriteString(testLogSummary)
	files["logs/test.log"] = testLog.String()
	var buildLog strings.Builder
	for i := 0; buildLog.Len() < 2<<20; i++ {
		fmt.Fprintf(&buildLog, "[%06d] compile internal/gen/file%04d.go: ok (%d symbols)\n", i, i%5000, i%97)
	}
	files["logs/build.log"] = buildLog.String()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// goSource is a Go file of n small functions, shaped like real code.
func goSource(pkg, prefix string, n int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "package %s\n\nimport \"fmt\"\n\n", pkg)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&s, "// %s%d returns its input scaled by %d.\nfunc %s%d(x int) int {\n\tif x < 0 {\n\t\treturn len(fmt.Sprint(x))\n\t}\n\treturn x * %d\n}\n\n", prefix, i, i, prefix, i, i)
	}
	return s.String()
}

// anthRequestBlocks is the part of an Anthropic request that caching sees,
// in its order: tools, system, then each message's content blocks.
type anthRequestBlocks struct {
	Tools    []json.RawMessage `json:"tools"`
	System   []json.RawMessage `json:"system"`
	Messages []struct {
		Content []json.RawMessage `json:"content"`
	} `json:"messages"`
}

// cacheBill is a session's input as Anthropic would count it.
type cacheBill struct {
	input   int     // tokens sent
	read    int     // of which read from the cache
	written int     // of which written to it
	cached  float64 // what they cost in uncached input tokens
}

// simulateCaching bills requests the way Anthropic's prompt cache does:
// a breakpoint (cache_control) looks for an entry at itself and at the up
// to 20 block boundaries before it, entries exist only where an earlier
// request had a breakpoint on a prefix of at least minTokens, reads cost
// 0.1×, writes 1.25×, the rest 1×. A token is 4 bytes of the request.
func simulateCaching(b testing.TB, bodies [][]byte, minTokens int) cacheBill {
	b.Helper()
	const lookback = 20
	var bill cacheBill
	stored := map[[32]byte]bool{}
	for n, body := range bodies {
		var r anthRequestBlocks
		if err := json.Unmarshal(body, &r); err != nil {
			b.Fatal(err)
		}
		var blocks []json.RawMessage
		blocks = append(blocks, r.Tools...)
		blocks = append(blocks, r.System...)
		for _, m := range r.Messages {
			blocks = append(blocks, m.Content...)
		}
		total := len(body) / 4
		var hashes [][32]byte
		var ends []int // tokens up to and including each block
		var breakpoints []int
		h := sha256.Sum256(nil)
		tokens := 0
		for i, raw := range blocks {
			content, marked := withoutCacheControl(b, raw)
			h = sha256.Sum256(append(h[:], content...))
			tokens += len(content) / 4
			hashes, ends = append(hashes, h), append(ends, tokens)
			if marked {
				breakpoints = append(breakpoints, i)
			}
		}
		read, writeEnd := 0, 0
		for _, bp := range breakpoints {
			for j := bp; j >= 0 && j >= bp-lookback; j-- {
				if stored[hashes[j]] {
					read = max(read, ends[j])
					break
				}
			}
			if ends[bp] >= minTokens {
				writeEnd = max(writeEnd, ends[bp])
			}
		}
		for _, bp := range breakpoints {
			if ends[bp] >= minTokens {
				stored[hashes[bp]] = true
			}
		}
		written := max(0, writeEnd-read)
		if os.Getenv("ZOT_BENCH_VERBOSE") != "" {
			fmt.Printf("request %2d: %6d tokens, %3d blocks, breakpoints %v, read %6d, written %6d\n", n+1, total, len(blocks), breakpoints, read, written)
		}
		bill.input += total
		bill.read += read
		bill.written += written
		bill.cached += 0.1*float64(read) + 1.25*float64(written) + float64(total-read-written)
	}
	return bill
}

// withoutCacheControl is a block as the cache keys it: without its marker.
func withoutCacheControl(b testing.TB, raw json.RawMessage) ([]byte, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		b.Fatal(err)
	}
	_, marked := m["cache_control"]
	delete(m, "cache_control")
	out, _ := json.Marshal(m)
	return out, marked
}

// withBashBudget rewrites a recorded request as if every bash result had
// been cut to head bytes of its start and tail bytes of its end.
func withBashBudget(b testing.TB, body []byte, head, tail int) []byte {
	b.Helper()
	var req map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		b.Fatal(err)
	}
	bashCalls := map[string]bool{}
	msgs, _ := req["messages"].([]any)
	for _, m := range msgs {
		for _, c := range m.(map[string]any)["content"].([]any) {
			block := c.(map[string]any)
			switch block["type"] {
			case "tool_use":
				if block["name"] == "bash" {
					bashCalls[block["id"].(string)] = true
				}
			case "tool_result":
				if !bashCalls[block["tool_use_id"].(string)] {
					continue
				}
				parts, _ := block["content"].([]any)
				for _, p := range parts {
					part := p.(map[string]any)
					text, _ := part["text"].(string)
					if len(text) > head+tail {
						part["text"] = text[:head] + fmt.Sprintf("\n[… %d bytes left out …]\n", len(text)-head-tail) + text[len(text)-tail:]
					}
				}
			}
		}
	}
	out, err := json.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// toolResultText is the text of the result for call id in a request.
func toolResultText(b testing.TB, body []byte, id string) string {
	b.Helper()
	var req struct {
		Messages []struct {
			Content []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
				Content   []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		b.Fatal(err)
	}
	var s strings.Builder
	for _, m := range req.Messages {
		for _, c := range m.Content {
			if c.Type == "tool_result" && c.ToolUseID == id {
				for _, p := range c.Content {
					s.WriteString(p.Text)
				}
			}
		}
	}
	return s.String()
}
