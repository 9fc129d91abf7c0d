package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A gateway's settings in models.json: its key from a command (run once,
// never shown), a header from the environment, the compatibility switches
// — all on the request, none of the secrets anywhere else.
func TestModelsJSONGatewaySettings(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: localEvents(50, gen{Text: "hi"})})
	z := newZotRun(t)
	runs := filepath.Join(z.home, "key-runs")
	writeModelsFile(t, z.home, fmt.Sprintf(`{"providers": {"openai": {
	  "baseUrl": %q,
	  "apiKey": "!echo run >> %s; printf 'sk-from-command'",
	  "headers": {"X-Tenant": "$ZOT_TEST_TENANT", "X-Fixed": "yes"},
	  "models": [{"id": "gw-model", "maxTokens": 777, "headers": {"X-Fixed": "model"},
	    "compat": {"maxTokensField": "max_completion_tokens", "supportsUsageInStreaming": false, "supportsDeveloperRole": true}}]}}}`, srv.URL+"/llm/v1", runs))
	z.env = append(z.env, "ZOT_TEST_TENANT=tenant-7", "OPENAI_API_KEY=sk-env-not-used")
	stdout, stderr, code := z.run("--json", "--provider", "openai", "--model", "gw-model", "hi")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := srv.Requests()[0]
	if r.Path != "/llm/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-from-command" || r.Header.Get("X-Tenant") != "tenant-7" || r.Header.Get("X-Fixed") != "model" {
		t.Errorf("request %s %v", r.Path, r.Header)
	}
	var body map[string]json.RawMessage
	json.Unmarshal(r.Body, &body)
	if string(body["max_completion_tokens"]) != "777" || body["max_tokens"] != nil || body["stream_options"] != nil || !strings.Contains(string(body["messages"]), `"role":"developer"`) {
		t.Errorf("body %s", r.Body)
	}
	if b, _ := os.ReadFile(runs); string(b) != "run\n" {
		t.Errorf("the key command ran %q times", b)
	}
	sessions, _ := filepath.Glob(filepath.Join(z.home, "sessions", "*", "*.jsonl"))
	for _, f := range append(sessions, filepath.Join(z.home, "models-cache.json")) {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), "sk-from-command") {
			t.Errorf("%s holds the key", f)
		}
	}
	if strings.Contains(stdout+stderr, "sk-from-command") {
		t.Error("the key was shown")
	}
}

func TestModelsJSONKeyProblemsAreNamedNotShown(t *testing.T) {
	t.Parallel()
	srv := startReplay(t)
	for _, c := range []struct{ key, want string }{
		{"!echo sk-half-printed >&2; exit 3", `models.json apiKey of provider "openai": the command failed (exit status 3): sk-half-printed`},
		{"$ZOT_TEST_UNSET_KEY", `models.json apiKey of provider "openai": the environment variable ZOT_TEST_UNSET_KEY is not set`},
		{"!true", "the command printed nothing"},
	} {
		z := newZotRun(t)
		writeModelsFile(t, z.home, fmt.Sprintf(`{"providers": {"openai": {"apiKey": %q}}}`, c.key))
		_, stderr, code := z.run("-p", "--provider", "openai", "--base-url", srv.URL, "--model", "m", "hi")
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q", c.key, code, stderr)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests went out", n)
	}
}

// Settings for one server are not sent to another: a provider block with
// a baseUrl keeps its key and headers for that server. Not parallel: the
// settings are process-wide.
func TestModelsJSONSettingsStayWithTheirServer(t *testing.T) {
	home := t.TempDir()
	t.Cleanup(func() { SetUserModels(nil); setUserServers(nil, nil) })
	writeModelsFile(t, home, `{"providers": {"openai": {"baseUrl": "https://gw.example/v1", "apiKey": "gw-key", "headers": {"X-T": "1"}, "textToolCalls": false,
	  "models": [{"id": "m", "tools": false}, {"id": "elsewhere", "baseUrl": "http://other:8080/v1", "headers": {"X-O": "2"}}]}}}`)
	notes := useUserModels(home)
	if len(notes) != 0 {
		t.Fatalf("notes %q", notes)
	}
	pc, err := endpointConfig(home, ProviderConfig{Name: "openai", BaseURL: "https://gw.example/v1/", APIKey: "env-key", KeySource: "OPENAI_API_KEY"}, "m")
	if err != nil || pc.APIKey != "gw-key" || pc.Local.Headers["X-T"] != "1" || pc.Local.TextToolCalls == nil || *pc.Local.TextToolCalls || pc.Local.Tools == nil || *pc.Local.Tools {
		t.Errorf("the gateway: %v %+v", err, pc)
	}
	pc, _ = endpointConfig(home, ProviderConfig{Name: "openai", BaseURL: "http://laptop:8080/v1", APIKey: "env-key", KeySource: "OPENAI_API_KEY"}, "m")
	if pc.APIKey != "env-key" || pc.Local.Headers != nil || pc.Local.Tools != nil {
		t.Errorf("another server got the gateway's settings: %+v", pc)
	}
	pc, _ = endpointConfig(home, ProviderConfig{Name: "openai", BaseURL: "http://gw.example/v1", APIKey: "flag-key", KeySource: "--api-key"}, "m")
	if pc.APIKey != "flag-key" {
		t.Errorf("--api-key lost to models.json")
	}
	pc, _ = endpointConfig(home, ProviderConfig{Name: "openai", BaseURL: "http://other:8080/v1"}, "elsewhere")
	if pc.Local.Headers["X-O"] != "2" || pc.Local.Headers["X-T"] != "" || pc.APIKey != "" {
		t.Errorf("a model's own server: %+v", pc)
	}
}

func TestModelsJSONBadSettingsAreNoted(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeModelsFile(t, home, `{"providers": {"openai": {"headers": {"Bad Name": "x"},
	  "models": [{"id": "a", "responseTimeout": "soon"}, {"id": "b", "compat": {"maxTokensField": "tokens"}}, {"id": "c", "compactThreshold": 2}, {"id": "d", "baseUrl": "localhost:8080"}]}}}`)
	notes := strings.Join(useUserModelsIn(home), "\n")
	for _, want := range []string{`provider "openai": header name "Bad Name"`, `openai/a: responseTimeout: "soon" is not a duration`, `openai/b: compat.maxTokensField must be`, `openai/c: compactThreshold must be above 0`, `openai/d: baseUrl "localhost:8080" is not an http:// or https:// URL`} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

// useUserModelsIn is useUserModels' notes without changing what the
// process knows (tests run in parallel).
func useUserModelsIn(home string) []string {
	_, notes, err := loadUserModels(home)
	if err != nil {
		notes = append(notes, err.Error())
	}
	_, _, more := loadUserServers(home)
	return append(notes, more...)
}

// The timeouts come from config.json and models.json, not only flags. Not
// parallel: models.json's settings are process-wide.
func TestTimeoutsFromConfigAndModelsJSON(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.json"), `{"response_timeout": "7m", "idle_timeout": "25m"}`, 0o600)
	writeModelsFile(t, home, `{"providers": {"ollama": {"models": [{"id": "slow", "responseTimeout": "20m"}]}}}`)
	if notes := useUserModels(home); len(notes) != 0 {
		t.Fatal(notes)
	}
	t.Cleanup(func() { SetUserModels(nil); setUserServers(nil, nil) })
	pc, _ := endpointConfig(home, ProviderConfig{Name: "ollama"}, "slow")
	if pc.ResponseTimeout != 20*time.Minute || pc.IdleTimeout != 25*time.Minute {
		t.Errorf("slow: response %v idle %v", pc.ResponseTimeout, pc.IdleTimeout)
	}
	pc, _ = endpointConfig(home, ProviderConfig{Name: "ollama", ResponseTimeout: time.Minute}, "other")
	if pc.ResponseTimeout != time.Minute || pc.IdleTimeout != 25*time.Minute {
		t.Errorf("flag: response %v idle %v", pc.ResponseTimeout, pc.IdleTimeout)
	}
	p, _ := NewProvider(pc)
	if h := p.(*ollamaProvider).openai.http; h.headerTimeout != time.Minute || h.idle != 25*time.Minute {
		t.Errorf("provider: %v %v", h.headerTimeout, h.idle)
	}
}

// config.json's response_timeout ends a run whose server never answers.
func TestConfigResponseTimeoutEndsAHangingRun(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the server notices the client leave only after the body
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	z := newZotRun(t)
	writeFile(t, filepath.Join(z.home, "config.json"), `{"response_timeout": "1s"}`, 0o600)
	_, stderr, code := z.run("--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "local", "-p", "hi")
	if code != 1 || !strings.Contains(stderr, "no response within 1s") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// compact_threshold in config.json, and a model's compactThreshold over
// it, decide when the conversation is compacted.
func TestCompactThresholdIsSettable(t *testing.T) {
	t.Parallel()
	step := func(id string, prompt int) replayStep {
		return replayStep{Events: localEvents(prompt, gen{ToolID: id, ToolName: "read", ToolArgs: `{"path":"notes.txt"}`})}
	}
	for _, c := range []struct {
		name, config, models string
		compacts             bool
	}{
		{"default 0.85: 60% stays", "", `{"id": "local", "contextWindow": 10000}`, false},
		{"config 0.5", `{"compact_threshold": 0.5}`, `{"id": "local", "contextWindow": 10000}`, true},
		{"the model's 0.9 over config's 0.5", `{"compact_threshold": 0.5}`, `{"id": "local", "contextWindow": 10000, "compactThreshold": 0.9}`, false},
		{"the model's 0.5", "", `{"id": "local", "contextWindow": 10000, "compactThreshold": 0.5}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := startReplay(t, step("t1", 1000), step("t2", 1000), step("t3", 6000),
				replayStep{Events: localEvents(100, gen{Text: "- read notes"})},
				replayStep{Events: localEvents(100, gen{Text: "done"})})
			z := newZotRun(t)
			os.WriteFile(filepath.Join(z.cwd, "notes.txt"), []byte("hello"), 0o600)
			if c.config != "" {
				writeFile(t, filepath.Join(z.home, "config.json"), c.config, 0o600)
			}
			writeModelsFile(t, z.home, `{"providers": {"openai": {"models": [`+c.models+`]}}}`)
			stdout, stderr, code := z.run(append(localFlags(srv), "--json", "read")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if got := strings.Contains(stdout, `"type":"compact_done"`); got != c.compacts {
				t.Errorf("compacted %v, want %v", got, c.compacts)
			}
		})
	}
}
