package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// hostLog is a server that only records who reached it with what: the
// host a redirect points to.
type hostLog struct {
	*httptest.Server
	mu   sync.Mutex
	seen []http.Header
}

func startHostLog(t *testing.T) *hostLog {
	h := &hostLog{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.seen = append(h.seen, r.Header.Clone())
		h.mu.Unlock()
		http.Error(w, "gotcha", http.StatusTeapot)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hostLog) requests() []http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seen
}

// elsewhere is u's address under another host name (localhost for
// 127.0.0.1): another host to Go's redirect policy as to zot's.
func elsewhere(t *testing.T, u string) string {
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.Host = "localhost:" + p.Port()
	return p.String()
}

// redirector answers every request with a 307 to target+path.
func redirector(t *testing.T, target string) (*httptest.Server, *int) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// A provider that answers 307 to another host does not get zot's key or
// the user's headers sent there, the run fails at once (no retries) and
// the error names both ends of the redirect — for the Messages API's
// x-api-key, for a gateway's models.json headers, and for the model list.
func TestProviderKeysNeverFollowARedirectToAnotherHost(t *testing.T) {
	t.Parallel()
	evil := startHostLog(t)
	to := elsewhere(t, evil.URL)
	gw, hits := redirector(t, to)
	check := func(what, stderr string, code int, want ...string) {
		t.Helper()
		if code == 0 {
			t.Errorf("%s: exit 0", what)
		}
		for _, w := range append(want, "redirected", "configure it instead") {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr lacks %q: %s", what, w, stderr)
			}
		}
		if strings.Contains(stderr, "sk-secret") || strings.Contains(stderr, "tenant-secret") {
			t.Errorf("%s: the error shows a secret: %s", what, stderr)
		}
	}

	z := newZotRun(t)
	_, stderr, code := z.run("-p", "--provider", "anthropic", "--base-url", gw.URL, "--api-key", "sk-secret", "hi")
	check("anthropic", stderr, code, gw.URL+"/v1/messages", to+"/v1/messages")
	if *hits != 1 {
		t.Errorf("the redirect was tried %d times, want once (a refused redirect is not retried)", *hits)
	}

	z = newZotRun(t)
	writeModelsFile(t, z.home, fmt.Sprintf(`{"providers": {"openai": {"baseUrl": %q, "apiKey": "sk-secret", "headers": {"X-Tenant": "tenant-secret"}, "models": [{"id": "m"}]}}}`, gw.URL+"/v1"))
	_, stderr, code = z.run("-p", "--provider", "openai", "--model", "m", "hi")
	check("openai gateway", stderr, code, to+"/v1/chat/completions")

	z = newZotRun(t)
	writeModelsFile(t, z.home, fmt.Sprintf(`{"providers": {"anthropic": {"baseUrl": %q, "headers": {"X-Tenant": "tenant-secret"}}}}`, gw.URL))
	_, stderr, _ = z.run("--list-models", "--provider", "anthropic", "--base-url", gw.URL, "--api-key", "sk-secret")
	check("model list", stderr, 1, to+"/v1/models")

	for _, h := range evil.requests() {
		t.Errorf("the other host was sent a request: %v", h)
	}
}

// A redirect within the server the user named is followed, key and all.
func TestProviderFollowsARedirectOnTheSameHost(t *testing.T) {
	t.Parallel()
	replay := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "moved fine"})})
	mux := http.NewServeMux()
	mux.HandleFunc("/old/v1/messages", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/new/v1/messages", http.StatusPermanentRedirect)
	})
	mux.HandleFunc("/new/v1/messages", replay.serve)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	stdout, stderr, code := newZotRun(t).run("-p", "--provider", "anthropic", "--base-url", srv.URL+"/old", "--api-key", "sk-same", "hi")
	if code != 0 || strings.TrimSpace(stdout) != "moved fine" {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	if r := replay.Requests(); len(r) != 1 || r[0].Header.Get("x-api-key") != "sk-same" {
		t.Errorf("requests after the redirect: %+v", r)
	}
}

func TestSameOriginRedirects(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		from, to string
		follow   bool
	}{
		{"https://api.example.com/v1/messages", "https://api.example.com/v2/messages", true},
		{"https://api.example.com/v1", "https://API.example.com:443/v1", true},
		{"http://gw.example/v1", "https://gw.example/v1", true},
		{"http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/w", true},
		{"https://api.example.com/v1", "http://api.example.com/v1", false},
		{"https://api.example.com/v1", "https://evil.example/v1", false},
		{"https://api.example.com/v1", "https://sub.api.example.com/v1", false},
		{"http://127.0.0.1:8080/v1", "http://127.0.0.1:9090/v1", false},
		{"http://127.0.0.1:8080/v1", "http://localhost:8080/v1", false},
		{"http://gw.example:8080/v1", "https://gw.example/v1", false},
	} {
		from, _ := http.NewRequest("POST", c.from, nil)
		to, _ := http.NewRequest("POST", c.to, nil)
		err := sameOriginRedirects(to, []*http.Request{from})
		if (err == nil) != c.follow {
			t.Errorf("%s → %s: %v, want follow=%v", c.from, c.to, err, c.follow)
		}
	}
	from, _ := http.NewRequest("POST", "https://user:pw@api.example.com/v1?key=k1", nil)
	to, _ := http.NewRequest("POST", "https://evil.example/x?key=k2", nil)
	if err := sameOriginRedirects(to, []*http.Request{from}); err == nil || strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "k1") || strings.Contains(err.Error(), "k2") ||
		!strings.Contains(err.Error(), "https://api.example.com/v1 to https://evil.example/x (another host)") {
		t.Errorf("error %v", err)
	}
}
