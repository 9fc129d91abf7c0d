package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

func TestBaseURLWithAPathIsUsedAsGiven(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: openaiEvents(gen{Text: "ok"})})
	for _, c := range []struct {
		provider, base, want string
	}{
		{"openai", "", "/v1/chat/completions"},
		{"openai", "/", "/v1/chat/completions"},
		{"openai", "/v1", "/v1/chat/completions"},
		{"openai", "/v1/", "/v1/chat/completions"},
		{"openai", "/v1beta/openai/", "/v1beta/openai/chat/completions"},
		{"openai", "/llm/gateway", "/llm/gateway/chat/completions"},
		{"ollama", "/v1", "/v1/chat/completions"},
		{"anthropic", "", "/v1/messages"},
		{"anthropic", "/proxy", "/proxy/v1/messages"},
	} {
		p, _ := testProvider(t, c.provider, srv.URL+c.base)
		before := len(srv.Requests())
		model := "m"
		if c.provider == "anthropic" {
			model = "claude-sonnet-4-5"
		}
		if got := callProvider(t, p, Request{Model: model}); got.err != nil && c.provider != "anthropic" {
			t.Errorf("%s %q: %v", c.provider, c.base, got.err)
		}
		reqs := srv.Requests()
		if len(reqs) != before+1 || reqs[before].Path != c.want {
			t.Errorf("%s base %q: request went to %q, want %q", c.provider, c.base, reqs[len(reqs)-1].Path, c.want)
		}
	}
}

func TestBaseURLKeepsItsQueryAfterThePath(t *testing.T) {
	t.Parallel()
	got := openaiURL("https://gw.example/api/v2?tenant=a", "/chat/completions")
	if got != "https://gw.example/api/v2/chat/completions?tenant=a" {
		t.Errorf("got %s", got)
	}
	if r := serverRoot("http://h:11434/v1/"); r != "http://h:11434" {
		t.Errorf("root = %s", r)
	}
}

// A page where the API should be — a proxy's HTML, a server's plain 404 —
// is one line naming the request, its status and type, not the page.
func TestErrorPageNamesTheRequestNotThePage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, ctype, body, want string
	}{
		{"html", "text/html; charset=utf-8", "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\n<body><h1>Not Found</h1><p>The requested URL was not found on this server.</p>\n<hr><address>Apache/2.4 Server</address></body></html>\n",
			"POST %s/v1/messages → 404 (text/html): check --base-url; the server said: 404 Not Found"},
		{"plain", "text/plain; charset=utf-8", "404 page not found\n",
			"POST %s/v1/messages → 404 (text/plain): check --base-url; the server said: 404 page not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", c.ctype)
				w.WriteHeader(404)
				io.WriteString(w, c.body)
			}))
			defer srv.Close()
			z := newZotRun(t)
			_, stderr, code := z.run("-p", "--provider", "anthropic", "--base-url", srv.URL+"?key=secret", "--api-key", "k", "hi")
			want := "zot: anthropic: " + strings.Replace(c.want, "%s", srv.URL, 1) + "\n"
			if code != 1 || stderr != want {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, want)
			}
		})
	}
}

func TestBadBaseURLIsAUsageError(t *testing.T) {
	t.Parallel()
	srv := startReplay(t)
	for _, bad := range []string{"localhost:8080", "ftp://host/v1", "http://", "127.0.0.1"} {
		z := newZotRun(t)
		_, stderr, code := z.run("-p", "--provider", "openai", "--model", "m", "--base-url", bad, "hi")
		if code != 2 || !strings.Contains(stderr, "--base-url") || !strings.Contains(stderr, "http://") {
			t.Errorf("--base-url %s: exit %d, stderr %q; want 2 and a line saying what a URL looks like", bad, code, stderr)
		}
	}
	// The same mistake in config.json names the file.
	z := newZotRun(t)
	writeFile(t, filepath.Join(z.home, "config.json"), `{"provider": "openai", "model": "m", "base_url": "localhost:8080"}`, 0o600)
	_, stderr, code := z.run("-p", "hi")
	if code != 1 || !strings.Contains(stderr, "config.json: base_url") {
		t.Errorf("config.json: exit %d, stderr %q", code, stderr)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests went out", n)
	}
}
