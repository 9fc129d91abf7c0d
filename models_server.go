package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
)

// The models the configured server serves, for --list-models and the
// /model picker. zot asks only a server the user named — --base-url,
// config.json's base_url, a models.json baseUrl — or the local ollama when
// ollama is the provider: never the public Anthropic or OpenAI endpoints,
// whose models the catalogue lists already. The answer is kept in
// $ZOT_HOME/models-cache.json for modelsCacheTTL, so a start within that
// time sends nothing, and the TUI fetches in the background, so a slow or
// dead server never delays start-up.

// modelsCacheTTL is how long a server's list is used without asking again.
const modelsCacheTTL = 6 * time.Hour

// Bounds on what a server may send back.
const (
	maxModelListBytes = 4 << 20
	maxServerModels   = 2000
	maxModelIDBytes   = 256
)

// modelServer is a server zot may ask for its models.
type modelServer struct {
	provider string // anthropic, openai, ollama
	baseURL  string // as the provider is configured; "" for ollama's default
	apiKey   string
	headers  map[string]string // models.json's, on every request
}

// serverFor is the server of provider to list models from, if the user
// configured one.
func serverFor(provider, baseURL, apiKey string) (modelServer, bool) {
	if baseURL == "" && provider != "ollama" {
		return modelServer{}, false
	}
	return modelServer{provider: provider, baseURL: strings.TrimRight(baseURL, "/"), apiKey: apiKey}, true
}

// base is the server's base URL, ollama's local default when none was
// given.
func (s modelServer) base() string {
	if s.baseURL == "" {
		return "http://localhost:11434/v1"
	}
	return s.baseURL
}

// requests are the URLs asked, in order, until one answers with a list:
// ollama's own /api/tags first for ollama (a server that only speaks the
// OpenAI API answers the second), else the OpenAI list: {base}/models for
// a base with a path, {base}/v1/models for a bare host.
func (s modelServer) requests() []string {
	base := s.base()
	openai := openaiURL(base, "/models")
	if s.provider == "ollama" {
		return []string{endpointURL(serverRoot(base), "/api/tags"), openai}
	}
	return []string{openai}
}

// shownBase is the base URL without what it may carry of credentials
// (user:password@, a ?key= query): for the cache and for messages.
func (s modelServer) shownBase() string {
	base := s.base()
	if u, err := url.Parse(base); err == nil {
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		base = u.String()
	}
	return base
}

func (s modelServer) cacheKey() string { return s.provider + " " + s.shownBase() }

// modelsCache is $ZOT_HOME/models-cache.json: the servers' model lists,
// and what local servers said of a model (its context, whether it takes
// tools: providers_local.go).
type modelsCache struct {
	Servers map[string]cachedModelList `json:"servers"`
	Probes  map[string]ServerInfo      `json:"probes,omitempty"`
}

// updateModelsCache changes the cache under an exclusive lock on
// models-cache.json.lock, so two zots listing models at once both keep
// what they learned: each reads the cache as the other left it, changes
// its own entries, and replaces the file whole (temp file and rename). A
// cache that cannot be locked or written is only not kept.
func updateModelsCache(home string, change func(*modelsCache)) error {
	return underLock(modelsCachePath(home)+".lock", func() error {
		c := readModelsCache(home)
		change(&c)
		b, _ := json.MarshalIndent(c, "", "  ")
		return writeFileAtomic(modelsCachePath(home), append(b, '\n'), 0o600)
	})
}

type cachedModelList struct {
	Fetched time.Time         `json:"fetched"`
	Models  []cachedModelInfo `json:"models"`
}

type cachedModelInfo struct {
	ID            string `json:"id"`
	ContextWindow int    `json:"context_window,omitempty"`
	// State is a llama-server router's load state of the model: loaded,
	// loading, unloaded, failed ("" from other servers).
	State string `json:"state,omitempty"`
}

func modelsCachePath(home string) string { return filepath.Join(home, "models-cache.json") }

// readModelsCache reads the cache; a missing or unreadable one is empty
// (it is only a cache).
func readModelsCache(home string) modelsCache {
	var c modelsCache
	if b, err := os.ReadFile(modelsCachePath(home)); err == nil {
		json.Unmarshal(b, &c)
	}
	if c.Servers == nil {
		c.Servers = map[string]cachedModelList{}
	}
	return c
}

// useCachedServerModels makes the cached list of s known and reports
// whether it is fresh enough to use without asking the server.
func useCachedServerModels(home string, s modelServer, now time.Time) (fresh bool) {
	list, ok := readModelsCache(home).Servers[s.cacheKey()]
	if !ok {
		return false
	}
	SetServerModels(s.provider, serverModelInfos(s.provider, list.Models))
	return now.Sub(list.Fetched) < modelsCacheTTL && !list.Fetched.After(now)
}

// fetchServerModels asks s for its models, makes them known and caches
// them. The caller bounds the wait with ctx.
func fetchServerModels(ctx context.Context, home string, s modelServer, now time.Time) error {
	var errs []string
	client := httpClientFor(s.headers)
	for _, u := range s.requests() {
		models, err := s.fetch(ctx, client, u)
		if err != nil {
			errs = append(errs, err.Error())
			if ctx.Err() != nil {
				break
			}
			continue
		}
		SetServerModels(s.provider, serverModelInfos(s.provider, models))
		err = updateModelsCache(home, func(c *modelsCache) {
			c.Servers[s.cacheKey()] = cachedModelList{Fetched: now.UTC(), Models: models}
		})
		if err != nil {
			return fmt.Errorf("cache the model list in %s: %w", modelsCachePath(home), err)
		}
		return nil
	}
	return fmt.Errorf("list the models of %s: %s", sanitize(s.shownBase()), strings.Join(errs, "; "))
}

// fetch asks one URL and reads an OpenAI ({"data":[{"id":…}]}) or ollama
// ({"models":[{"name":…}]}) list.
func (s modelServer) fetch(ctx context.Context, client *http.Client, u string) ([]cachedModelInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	switch {
	case s.apiKey == "":
	case s.provider == "anthropic":
		req.Header.Set("x-api-key", s.apiKey)
		req.Header.Set("anthropic-version", "2023-06-01")
	default:
		req.Header.Set("Authorization", "Bearer "+s.apiKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, scrubURLError(err)
	}
	defer resp.Body.Close()
	path := req.URL.Path
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", path, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxModelListBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(body) > maxModelListBytes {
		return nil, fmt.Errorf("%s: the list is larger than %d MiB", path, maxModelListBytes>>20)
	}
	var list struct {
		Data []struct {
			ID            string `json:"id"`
			MaxModelLen   int    `json:"max_model_len"`  // vLLM
			ContextLength int    `json:"context_length"` // LM Studio, OpenRouter
			Meta          struct {
				NCtx int `json:"n_ctx"` // llama-server
			} `json:"meta"`
			Status *routerStatus `json:"status"` // llama-server's router
		} `json:"data"`
		Models []struct {
			Name    string `json:"name"`
			Details struct {
				ContextLength int `json:"context_length"` // ollama: the trained length
			} `json:"details"`
		} `json:"models"`
	}
	if err := json.Unmarshal(body, &list); err != nil || (list.Data == nil && list.Models == nil) {
		return nil, fmt.Errorf("%s: not a model list", path)
	}
	var out []cachedModelInfo
	seen := map[string]bool{}
	add := func(m cachedModelInfo) {
		// llama-server lists its model twice, in "data" and "models".
		if len(out) < maxServerModels && validModelID(m.ID) && !seen[m.ID] {
			seen[m.ID] = true
			m.ContextWindow = max(0, m.ContextWindow)
			out = append(out, m)
		}
	}
	for _, m := range list.Data {
		add(cachedModelInfo{ID: m.ID, ContextWindow: max(m.MaxModelLen, m.ContextLength, m.Meta.NCtx, m.Status.ctxSize()), State: m.Status.state()})
	}
	for _, m := range list.Models {
		add(cachedModelInfo{ID: m.Name, ContextWindow: m.Details.ContextLength})
	}
	return out, nil
}

// validModelID keeps out of the picker what no model id looks like: empty,
// overlong, or with spaces or control characters.
func validModelID(id string) bool {
	if id == "" || len(id) > maxModelIDBytes || sanitize(id) != id {
		return false
	}
	return !strings.ContainsFunc(id, unicode.IsSpace)
}

func serverModelInfos(provider string, models []cachedModelInfo) []ModelInfo {
	out := make([]ModelInfo, 0, len(models))
	for _, m := range models {
		if validModelID(m.ID) {
			out = append(out, ModelInfo{ID: m.ID, Provider: provider, ContextWindow: m.ContextWindow, Source: SourceServer, State: m.State})
		}
	}
	return out
}

// listServerModels is the background listing of the TUI: the cache at
// once, the server when the cache is stale. It returns at once; report
// gets a failure (the /model picker says it: a server without a list is
// common, and not news worth a line of the transcript at every start),
// and stop cancels the request and waits for it.
func listServerModels(home string, s modelServer, report func(error)) (stop func()) {
	if useCachedServerModels(home, s, time.Now()) {
		return func() {}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan struct{})
	// Owned by the caller through stop; ends with the request, which ctx
	// bounds.
	go func() {
		defer close(done)
		if err := fetchServerModels(ctx, home, s, time.Now()); err != nil && !errors.Is(ctx.Err(), context.Canceled) {
			report(err)
		}
	}()
	return func() { cancel(); <-done }
}
