package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// modelListServer serves a model list on the paths given and counts
// every request it gets.
type modelListServer struct {
	*httptest.Server
	hits  atomic.Int64
	mu    sync.Mutex
	paths []string
}

func startModelList(t *testing.T, routes map[string]string) *modelListServer {
	t.Helper()
	s := &modelListServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path+" "+r.Header.Get("Authorization"))
		s.mu.Unlock()
		body, ok := routes[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

const servedModels = `{"object":"list","data":[
  {"id":"served-coder","object":"model","max_model_len":16384},
  {"id":"other-model","object":"model"},
  {"id":"bad id with spaces"},
  {"id":"\u001b[2Jescape"},
  {"id":""}]}`

func TestListModelsShowsWhatTheServerServesAndCachesIt(t *testing.T) {
	t.Parallel()
	srv := startModelList(t, map[string]string{"/v1/models": servedModels})
	z := newZotRun(t)
	args := []string{"--list-models", "--provider", "openai", "--base-url", srv.URL, "--api-key", "sk-local"}
	out, errOut, code := z.run(args...)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"openai     served-coder               ctx   16384  out  16384  $0/$0 per Mtok in/out  source: server\n",
		"openai     other-model                ctx  128000  out  16384  $0/$0 per Mtok in/out  source: server\n",
		"openai     gpt-5 ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "bad id") || strings.Contains(out, "escape") || strings.Contains(out, "anthropic") {
		t.Errorf("listed what no model id looks like, or another provider:\n%s", out)
	}
	if got := srv.paths; len(got) != 1 || got[0] != "/v1/models Bearer sk-local" {
		t.Errorf("requests = %q", got)
	}
	st, err := os.Stat(filepath.Join(z.home, "models-cache.json"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("cache: %v %v", st, err)
	}
	// Within the cache's life nothing is asked again.
	out, _, _ = z.run(args...)
	if srv.hits.Load() != 1 || !strings.Contains(out, "served-coder") {
		t.Errorf("second run: %d requests, listing\n%s", srv.hits.Load(), out)
	}
	if b, _ := os.ReadFile(filepath.Join(z.home, "models-cache.json")); strings.Contains(string(b), "sk-local") {
		t.Errorf("the cache holds the key: %s", b)
	}
}

func TestOllamaModelsComeFromItsTagList(t *testing.T) {
	t.Parallel()
	srv := startModelList(t, map[string]string{"/api/tags": `{"models":[{"name":"qwen3:4b","model":"qwen3:4b","size":123}]}`})
	z := newZotRun(t)
	out, errOut, code := z.run("--list-models", "--provider", "ollama", "--base-url", srv.URL+"/v1")
	if code != 0 || !strings.Contains(out, "ollama     qwen3:4b ") || !strings.Contains(out, "source: server") {
		t.Errorf("exit %d, stderr %s, stdout\n%s", code, errOut, out)
	}
	// A server that speaks only the OpenAI API answers the second request.
	srv2 := startModelList(t, map[string]string{"/v1/models": `{"data":[{"id":"llamacpp-model"}]}`})
	out, _, _ = z.run("--list-models", "--provider", "ollama", "--base-url", srv2.URL)
	if !strings.Contains(out, "llamacpp-model") || strings.Join(srv2.paths, ",") != "/api/tags ,/v1/models " {
		t.Errorf("requests %q, listing\n%s", srv2.paths, out)
	}
}

func TestServerWithGarbageLeavesTheListAsItWas(t *testing.T) {
	t.Parallel()
	for _, body := range []string{"<html>502 Bad Gateway</html>", `{"data": "no"}`, `{"unrelated": 1}`, strings.Repeat("x", maxModelListBytes+10)} {
		srv := startModelList(t, map[string]string{"/v1/models": body})
		z := newZotRun(t)
		out, errOut, code := z.run("--list-models", "--provider", "openai", "--base-url", srv.URL)
		if code != 0 || !strings.Contains(out, "gpt-5 ") || strings.Contains(out, "source: server") {
			t.Errorf("%.30q: exit %d, listing\n%s", body, code, out)
		}
		if !strings.Contains(errOut, "list the models of "+srv.URL+": /v1/models: ") {
			t.Errorf("%.30q: stderr %q", body, errOut)
		}
		if _, err := os.Stat(filepath.Join(z.home, "models-cache.json")); err == nil {
			t.Errorf("%.30q: a failed listing was cached", body)
		}
	}
}

// With no server configured zot asks nobody: not the public endpoints,
// whatever keys the environment holds. Every request is sent through a
// proxy that records it, so one would be seen.
func TestNoModelRequestsWithoutAConfiguredServer(t *testing.T) {
	t.Parallel()
	proxy := startModelList(t, nil)
	z := newZotRun(t)
	z.env = []string{"HTTPS_PROXY=" + proxy.URL, "HTTP_PROXY=" + proxy.URL, "ANTHROPIC_API_KEY=sk-ant", "OPENAI_API_KEY=sk-oai"}
	for _, args := range [][]string{{"--list-models"}, {"--list-models", "--provider", "openai"}, {"--list-models", "--provider", "anthropic"}} {
		if _, errOut, code := z.run(args...); code != 0 || errOut != "" {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
	if n := proxy.hits.Load(); n != 0 {
		t.Errorf("%d requests went out: %q", n, proxy.paths)
	}
	if _, ok := serverFor("anthropic", "", "sk"); ok {
		t.Error("the public Anthropic endpoint counted as a configured server")
	}
}

// The TUI's listing runs beside it: a server whose list never comes does
// not delay start-up, and stop ends the request.
func TestServerListingNeverDelaysTheTUI(t *testing.T) {
	t.Parallel()
	needTmux(t)
	listAsked := make(chan struct{}, 1)
	var chats atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			select {
			case listAsked <- struct{}{}:
				<-r.Context().Done() // the TUI's listing hangs until zot gives up
			default:
				// Asked again: the provider's look at the model before the
				// first request (providers_local.go), which would wait out
				// its own timeout here and is not what this test is about.
				http.NotFound(w, r)
			}
			return
		}
		chats.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range openaiEvents(gen{Text: "answer while the list hangs"}) {
			io.WriteString(w, ev)
		}
	}))
	t.Cleanup(srv.Close)
	z := newZotRun(t)
	tm := startTUI(t, z, "--provider", "openai", "--base-url", srv.URL, "--api-key", "sk-local", "--model", "local-model")
	tm.waitFor("/help for keys")
	select {
	case <-listAsked:
	case <-time.After(30 * time.Second):
		t.Fatal("the TUI never asked for the model list")
	}
	tm.typeText("hello")
	tm.keys("Enter")
	tm.waitFor("answer while the list hangs")
	tm.exitAndCheck()
}

func TestBackgroundListingStopsWithItsOwner(t *testing.T) {
	t.Parallel()
	asked, released := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(asked)
		<-r.Context().Done()
		close(released)
	}))
	t.Cleanup(srv.Close)
	var reported []error
	stop := listServerModels(t.TempDir(), modelServer{provider: "openai", baseURL: srv.URL}, func(err error) { reported = append(reported, err) })
	<-asked
	stop()
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the request outlived stop")
	}
	if len(reported) != 0 {
		t.Errorf("a stop reported %v", reported)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := fetchServerModels(ctx, t.TempDir(), modelServer{provider: "openai", baseURL: srv.URL}, time.Now()); err == nil {
		t.Error("a cancelled fetch succeeded")
	}
}

// The /model picker lists what the server serves, or says why it does not.
func TestModelPickerShowsTheServersModels(t *testing.T) {
	t.Parallel()
	needTmux(t)
	for _, tc := range []struct{ list, want string }{
		{servedModels, "openai/served-coder"},
		{"<html>gateway</html>", "not listed: list the models of"},
	} {
		srv := startModelList(t, map[string]string{"/v1/models": tc.list})
		z := newZotRun(t)
		tm := startTUI(t, z, "--provider", "openai", "--base-url", srv.URL, "--model", "local-model")
		tm.waitFor("/help for keys")
		waitFor(t, "the model list request", func() bool { return srv.hits.Load() > 0 })
		// The listing lands in the background; the picker reads it when
		// it opens, so it is opened again until it shows.
		for attempt := 0; ; attempt++ {
			tm.typeText("/model")
			tm.keys("Enter")
			if strings.Contains(tm.waitFor("choose a model"), tc.want) {
				break
			}
			if attempt == 100 {
				t.Fatalf("the picker never showed %q", tc.want)
			}
			tm.keys("Escape")
			tm.waitScreen("the picker closed", func(s string) bool { return !strings.Contains(s, "choose a model") })
		}
		tm.keys("Escape")
		tm.waitScreen("the picker closed", func(s string) bool { return !strings.Contains(s, "choose a model") })
		tm.exitAndCheck()
	}
}

// Zots listing the models of different servers at once each keep their
// list in models-cache.json: the updates merge under the cache's lock, and
// the file stays whole JSON. The servers answer together, once every zot
// has asked, so the writes meet.
func TestModelsCacheKeepsEveryListOfZotsListingAtOnce(t *testing.T) {
	t.Parallel()
	const zots = 8
	var arrived sync.WaitGroup
	arrived.Add(zots)
	z := newZotRun(t)
	var servers []string
	for i := 0; i < zots; i++ {
		id := fmt.Sprintf("model-of-server-%d", i)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			arrived.Done()
			arrived.Wait()
			fmt.Fprintf(w, `{"data":[{"id":%q}]}`, id)
		}))
		t.Cleanup(srv.Close)
		servers = append(servers, srv.URL)
	}
	var runs sync.WaitGroup
	for _, u := range servers {
		runs.Add(1)
		go func(u string) {
			defer runs.Done()
			if _, stderr, code := z.run("--list-models", "--provider", "openai", "--base-url", u, "--api-key", "k"); code != 0 || stderr != "" {
				t.Errorf("%s: exit %d: %s", u, code, stderr)
			}
		}(u)
	}
	runs.Wait()
	var cache modelsCache
	b, err := os.ReadFile(filepath.Join(z.home, "models-cache.json"))
	if err != nil || json.Unmarshal(b, &cache) != nil {
		t.Fatalf("the cache is not whole JSON: %v\n%s", err, b)
	}
	for i, u := range servers {
		if list, ok := cache.Servers["openai "+u]; !ok || len(list.Models) != 1 || list.Models[0].ID != fmt.Sprintf("model-of-server-%d", i) {
			t.Errorf("the list of %s was lost: %+v", u, list)
		}
	}
}
