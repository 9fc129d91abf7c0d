package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zotModelsFile is a models.json as a reference zot user has it: aliases,
// a provider-level baseUrl, fields zot does not use, a provider zot does
// not speak.
const zotModelsFile = `{
  "providers": {
    "ollama": {
      "baseUrl": "http://gpu-box:11434/v1",
      "discover": true,
      "models": [
        {"id": "qwen3.5:4b", "name": "Qwen 3.5 4B", "contextWindow": 32768, "maxTokens": 8192, "input": ["text"]},
        {"id": "coder:7b", "contextWindow": 65536, "baseUrl": "http://other:8080/v1", "reasoning": true}
      ]
    },
    "openai-codex": {"models": [{"id": "gpt-5", "priceInput": 9}]},
    "anthropic-messages": {"models": [{"id": "claude-local", "contextWindow": 100000, "maxTokens": 4000, "priceInput": 1.5, "priceOutput": 7, "priceCacheRead": 0.1, "priceCacheWrite": 2}]},
    "my-company": {"baseUrl": "https://llm.example", "api": "openai", "models": [{"id": "company-llm"}]}
  }
}`

func writeModelsFile(t *testing.T, home, content string) {
	t.Helper()
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "models.json"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestUserModelsFileInTheReferenceFormat(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeModelsFile(t, home, zotModelsFile)
	models, notes, err := loadUserModels(home)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], `"my-company"`) || !strings.Contains(notes[0], "models.json") {
		t.Errorf("notes = %q, want one naming the provider zot does not speak", notes)
	}
	byID := map[string]ModelInfo{}
	for _, m := range models {
		byID[m.Provider+"/"+m.ID] = m
	}
	want := map[string]ModelInfo{
		"ollama/qwen3.5:4b":      {ID: "qwen3.5:4b", Provider: "ollama", Name: "Qwen 3.5 4B", ContextWindow: 32768, MaxOutput: 8192, BaseURL: "http://gpu-box:11434/v1", Source: SourceUser, Known: true},
		"ollama/coder:7b":        {ID: "coder:7b", Provider: "ollama", ContextWindow: 65536, Reasoning: true, BaseURL: "http://other:8080/v1", Source: SourceUser, Known: true},
		"openai/gpt-5":           {ID: "gpt-5", Provider: "openai", Input: 9, Reasoning: true, API: APIResponses, Source: SourceUser, Known: true},
		"anthropic/claude-local": {ID: "claude-local", Provider: "anthropic", ContextWindow: 100000, MaxOutput: 4000, Input: 1.5, Output: 7, CacheRead: 0.1, CacheWrite: 2, Source: SourceUser, Known: true},
	}
	if len(byID) != len(want) {
		t.Fatalf("models = %+v", models)
	}
	for k, w := range want {
		if byID[k] != w {
			t.Errorf("%s = %+v\nwant %+v", k, byID[k], w)
		}
	}
}

func TestBrokenModelsFileIsReportedWithItsLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, content, want string
	}{
		{"syntax", "{\n  \"providers\": {\n    \"ollama\": {\"models\": [\n      {\"id\": \"a\",}\n    ]}\n  }\n}\n", "models.json line 4: not valid JSON"},
		{"type", "{\"providers\": {\"ollama\": {\"models\": [\n {\"id\": \"a\", \"contextWindow\": \"32k\"}]}}}", `models.json line 2: "contextWindow" must be a number, not a string`},
		{"cut off", "{\"providers\": {\n", "models.json line 2: not valid JSON: unexpected end of JSON input"},
	} {
		home := t.TempDir()
		writeModelsFile(t, home, tc.content)
		models, _, err := loadUserModels(home)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), home) || models != nil {
			t.Errorf("%s: err = %v, models %v; want %q with the path", tc.name, err, models, tc.want)
		}
	}
}

// A user's entry wins over the catalogue's, keeping what it leaves out;
// its own models are listed after the catalogue's. Not parallel: the
// learned models are process-wide.
func TestUserModelsWinOverTheCatalogue(t *testing.T) {
	home := t.TempDir()
	writeModelsFile(t, home, zotModelsFile)
	if notes := useUserModels(home); len(notes) != 1 {
		t.Fatalf("notes = %q", notes)
	}
	t.Cleanup(func() { SetUserModels(nil) })

	gpt5 := lookupModel("openai", "gpt-5")
	if gpt5.Input != 9 || gpt5.Output != 10 || gpt5.ContextWindow != 400000 || !gpt5.Reasoning || gpt5.Source != SourceUser {
		t.Errorf("gpt-5 = %+v: the user's price over the catalogue's other values", gpt5)
	}
	qwen := lookupModel("ollama", "qwen3.5:4b")
	if qwen.ContextWindow != 32768 || qwen.MaxOutput != 8192 || !qwen.Known {
		t.Errorf("qwen = %+v", qwen)
	}
	if got := lookupModel("ollama", "unknown:1b"); got.ContextWindow != defaultContextWindow || got.Known {
		t.Errorf("an unknown model = %+v", got)
	}
	var ids []string
	for _, m := range modelsFor("ollama") {
		ids = append(ids, m.ID+":"+modelSource(m))
	}
	if strings.Join(ids, ",") != "qwen3.5:4b:user,coder:7b:user" {
		t.Errorf("ollama models = %v", ids)
	}
	req, _ := json.Marshal((&openaiProvider{name: "ollama", plainMaxTokens: true}).buildRequest(Request{Model: "qwen3.5:4b"}))
	if !strings.Contains(string(req), `"max_tokens":8192`) {
		t.Errorf("request %s: want the user's maxTokens", req)
	}
	req, _ = json.Marshal((&openaiProvider{name: "openai"}).buildRequest(Request{Model: "gpt-4o"}))
	if strings.Contains(string(req), "max_") {
		t.Errorf("request %s: a catalogue model leaves the limit to the API", req)
	}
}

// The user's window drives auto-compaction in a real run: a local model
// the user said has 32k is compacted at 85% of that, where zot would
// otherwise assume 128k and run into the server's limit.
func TestUserModelWindowTriggersCompaction(t *testing.T) {
	t.Parallel()
	step := func(id string, promptTokens string) replayStep {
		ev := openaiEvents(gen{ToolID: id, ToolName: "read", ToolArgs: `{"path":"notes.txt"}`})
		ev[len(ev)-2] = strings.Replace(ev[len(ev)-2], `"prompt_tokens":120`, `"prompt_tokens":`+promptTokens, 1)
		return replayStep{Events: ev}
	}
	script := []replayStep{step("t1", "120"), step("t2", "120"), step("t3", "30000"),
		{Events: openaiEvents(gen{Text: "- read notes"})},
		{Events: openaiEvents(gen{Text: "finished"})}}
	for _, withFile := range []bool{true, false} {
		srv := startReplay(t, script...)
		z := newZotRun(t)
		os.WriteFile(filepath.Join(z.cwd, "notes.txt"), []byte("hello"), 0o600)
		if withFile {
			writeModelsFile(t, z.home, `{"providers": {"ollama": {"models": [{"id": "qwen3.5:4b", "contextWindow": 32768, "maxTokens": 8192}]}}}`)
		}
		out, errOut, code := z.run("--json", "--provider", "ollama", "--base-url", srv.URL, "--model", "qwen3.5:4b", "read the notes")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		compacted := strings.Contains(out, `"type":"compact_done"`)
		if compacted != withFile {
			t.Errorf("models.json %v: compacted %v\n%s", withFile, compacted, out)
		}
		body := string(srv.Requests()[0].Body)
		if withFile != strings.Contains(body, `"max_tokens":8192`) {
			t.Errorf("models.json %v: request %s", withFile, body)
		}
	}
}

func TestListModelsShowsUserModelsAndReportsABrokenFile(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	writeModelsFile(t, z.home, zotModelsFile)
	out, errOut, code := z.run("--list-models")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"ollama     qwen3.5:4b                 ctx   32768  out   8192  $0/$0 per Mtok in/out  source: user",
		"openai     gpt-5                      ctx  400000  out 128000  $9/$10 per Mtok in/out  source: user",
		"openai     gpt-4o                     ctx  128000  out  16384  $2.5/$10 per Mtok in/out  source: catalogue",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, `provider "my-company" is not one zot speaks`) {
		t.Errorf("stderr = %q", errOut)
	}

	writeModelsFile(t, z.home, "{\"providers\": {\n  \"ollama\": {\"models\": [}\n}")
	out, errOut, code = z.run("--list-models", "--provider", "openai")
	if code != 0 || !strings.Contains(out, "gpt-5 ") || strings.Count(errOut, "\n") != 1 ||
		!strings.Contains(errOut, filepath.Join(z.home, "models.json")+" line 2: not valid JSON") {
		t.Errorf("broken file: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}
