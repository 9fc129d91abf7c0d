package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
)

// The models zot learns beyond its catalogue: the user's own, described in
// $ZOT_HOME/models.json in the reference zot's format, and (models_server.go)
// those the configured server lists. Both are handed to the catalogue in
// providers_catalogue.go, which every lookup of a window, an output limit
// or a price goes through.

// userModelsFile is models.json:
//
//	{"providers": {"ollama": {"baseUrl": "…", "models": [{"id": "qwen3.5:4b", "name": "Qwen 3.5 4B",
//	  "contextWindow": 32768, "maxTokens": 8192, "reasoning": true, "baseUrl": "…", "api": "chat",
//	  "priceInput": 0, "priceOutput": 0, "priceCacheRead": 0, "priceCacheWrite": 0}]}}}
//
// Prices are dollars per million tokens. reasoning is true, false, or the
// thinking style of a Claude model ("adaptive", "budget"). api, on a
// provider or a model, is "responses" or "chat" (the reference's
// "openai-responses" and "openai-completions" too); other values of it are
// ignored. The settings of the server behind a provider or model (apiKey,
// headers, textToolCalls, tools, compat, timeouts) are read by
// models_settings.go. Fields zot does not use (auth, discover…) are
// ignored.
type userModelsFile struct {
	Providers map[string]userProvider `json:"providers"`
}

type userProvider struct {
	BaseURL string      `json:"baseUrl"`
	API     string      `json:"api"`
	Models  []userModel `json:"models"`
}

type userModel struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	Reasoning       json.RawMessage `json:"reasoning"`
	API             string          `json:"api"`
	ContextWindow   int             `json:"contextWindow"`
	MaxTokens       int             `json:"maxTokens"`
	BaseURL         string          `json:"baseUrl"`
	PriceInput      float64         `json:"priceInput"`
	PriceOutput     float64         `json:"priceOutput"`
	PriceCacheRead  float64         `json:"priceCacheRead"`
	PriceCacheWrite float64         `json:"priceCacheWrite"`
	// CompactThreshold is the share of the window that compacts the
	// conversation with this model (0.85 when left out).
	CompactThreshold float64 `json:"compactThreshold"`
}

// userAPIs are the values of "api" that choose an OpenAI API, the
// reference zot's names among them.
var userAPIs = map[string]string{
	APIResponses: APIResponses, "openai-responses": APIResponses, "openai-codex-responses": APIResponses,
	APIChat: APIChat, "openai-completions": APIChat,
}

// userReasoning are the values of "reasoning" that name a thinking style.
var userReasoning = map[string]string{ThinkingAdaptive: ThinkingAdaptive, ThinkingBudget: ThinkingBudget, "enabled": ThinkingBudget}

// userProviderAliases are the reference zot's transport names for the
// providers zot speaks.
var userProviderAliases = map[string]string{
	"openai-codex":       "openai",
	"openai-responses":   "openai",
	"anthropic-messages": "anthropic",
}

// loadUserModels reads $ZOT_HOME/models.json; a missing file is no models.
// err, when set, is a file that cannot be used at all: it names the file
// and line, and no model of it is used. notes name the entries that were
// skipped while the rest were used.
func loadUserModels(home string) (models []ModelInfo, notes []string, err error) {
	path := filepath.Join(home, "models.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w (custom models are not used)", path, err)
	}
	var file userModelsFile
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, nil, fmt.Errorf("%s: %s; fix it (custom models are not used until then)", jsonErrorPlace(path, data, err), jsonErrorText(err))
	}
	names := make([]string, 0, len(file.Providers))
	for name := range file.Providers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		prov := file.Providers[name]
		provider := name
		if alias, ok := userProviderAliases[name]; ok {
			provider = alias
		}
		if provider != "anthropic" && provider != "openai" && provider != "ollama" {
			notes = append(notes, fmt.Sprintf("%s: provider %q is not one zot speaks (anthropic, openai, ollama); its %d models are skipped", path, name, len(prov.Models)))
			continue
		}
		for i, um := range prov.Models {
			switch {
			case um.ID == "":
				notes = append(notes, fmt.Sprintf("%s: model %d of provider %q has no id; skipped", path, i+1, name))
				continue
			case um.ContextWindow < 0 || um.MaxTokens < 0:
				notes = append(notes, fmt.Sprintf("%s: %s/%s has a negative contextWindow or maxTokens; skipped", path, name, um.ID))
				continue
			case um.CompactThreshold < 0 || um.CompactThreshold > 1:
				notes = append(notes, fmt.Sprintf("%s: %s/%s: compactThreshold must be above 0 and at most 1 (0.85 compacts at 85%% of the window); skipped", path, name, um.ID))
				continue
			}
			if base := cmp.Or(um.BaseURL, prov.BaseURL); base != "" {
				if err := checkBaseURL(base); err != nil {
					notes = append(notes, fmt.Sprintf("%s: %s/%s: baseUrl %v; skipped", path, name, um.ID, err))
					continue
				}
			}
			m := ModelInfo{ID: um.ID, Provider: provider, Name: um.Name, BaseURL: um.BaseURL,
				ContextWindow: um.ContextWindow, MaxOutput: um.MaxTokens,
				Input: um.PriceInput, Output: um.PriceOutput, CacheRead: um.PriceCacheRead, CacheWrite: um.PriceCacheWrite,
				CompactThreshold: um.CompactThreshold, Source: SourceUser, Known: true}
			if m.BaseURL == "" {
				m.BaseURL = prov.BaseURL
			}
			for _, api := range []string{um.API, prov.API, providerAPIs[name]} {
				if m.API = userAPIs[api]; m.API != "" {
					break
				}
			}
			// An entry that only sets a price keeps the catalogue's
			// reasoning flag rather than turning reasoning off.
			var flag bool
			var style string
			switch {
			case len(um.Reasoning) == 0 || string(um.Reasoning) == "null":
				m.Reasoning = catalogueReasoning(provider, um.ID)
			case json.Unmarshal(um.Reasoning, &flag) == nil:
				m.Reasoning = flag
			case json.Unmarshal(um.Reasoning, &style) == nil && userReasoning[style] != "":
				m.Reasoning, m.Thinking = true, userReasoning[style]
			default:
				notes = append(notes, fmt.Sprintf(`%s: %s/%s: "reasoning" must be true, false, "adaptive" or "budget", not %s; the catalogue's is used`, path, name, um.ID, truncate(string(um.Reasoning), 40)))
				m.Reasoning = catalogueReasoning(provider, um.ID)
			}
			models = append(models, m)
		}
	}
	return models, notes, nil
}

// providerAPIs are the APIs the reference zot's provider names imply.
var providerAPIs = map[string]string{"openai-responses": APIResponses, "openai-codex": APIResponses}

// catalogueReasoning is the catalogue's reasoning flag for a model.
func catalogueReasoning(provider, id string) bool {
	cat, _ := catalogueModel(provider, id)
	return cat.Reasoning
}

// useUserModels loads models.json into the catalogue. What is wrong with
// the file comes back as notes for the user, once per run.
func useUserModels(home string) (notes []string) {
	models, notes, err := loadUserModels(home)
	if err != nil {
		return append(notes, err.Error())
	}
	SetUserModels(models)
	providers, servers, more := loadUserServers(home)
	setUserServers(providers, servers)
	return append(notes, more...)
}

// jsonErrorPlace is "path line N" for a decoding error that knows its
// offset, else the path.
func jsonErrorPlace(path string, data []byte, err error) string {
	var offset int64 = -1
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		offset = syntax.Offset
	case errors.As(err, &typ):
		offset = typ.Offset
	}
	if offset < 0 {
		return path
	}
	offset = min(offset, int64(len(data)))
	return fmt.Sprintf("%s line %d", path, 1+bytes.Count(data[:offset], []byte("\n")))
}

// jsonErrorText says what is wrong in words a user editing the file
// follows.
func jsonErrorText(err error) string {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) && typ.Field != "" {
		want := "a JSON " + typ.Type.Kind().String()
		switch typ.Type.Kind() {
		case reflect.Int, reflect.Float64:
			want = "a number"
		case reflect.Bool:
			want = "true or false"
		case reflect.Slice:
			want = "a list"
		case reflect.Struct, reflect.Map:
			want = "an object"
		}
		field := typ.Field[strings.LastIndex(typ.Field, ".")+1:]
		return fmt.Sprintf("%q must be %s, not a %s", field, want, typ.Value)
	}
	return "not valid JSON: " + err.Error()
}

// modelProviders are the providers whose models zot lists.
var modelProviders = []string{"anthropic", "openai", "ollama"}

// modelSummary is a model's line in the /model picker: window, prices and
// where zot knows it from.
func modelSummary(m ModelInfo) string {
	var parts []string
	if m.Name != "" {
		parts = append(parts, m.Name)
	}
	switch {
	case m.Known || m.Source == SourceUser:
		parts = append(parts, fmt.Sprintf("%s context · $%g/$%g per Mtok", contextSize(m.ContextWindow), m.Input, m.Output))
	case m.ContextWindow != defaultContextWindow:
		parts = append(parts, contextSize(m.ContextWindow)+" context")
	}
	return strings.Join(append(parts, modelSource(m)), " · ")
}

// contextSize is a context window for the picker: 200k, or 2,048 for
// the small ones, where a thousand tokens more or less matter.
func contextSize(n int) string {
	if n >= 10000 {
		return fmt.Sprintf("%dk", n/1000)
	}
	if n >= 1000 {
		return fmt.Sprintf("%d,%03d", n/1000, n%1000)
	}
	return fmt.Sprint(n)
}

// modelStates say a router's load states in words.
var modelStates = map[string]string{"unloaded": "not loaded", "failed": "failed to load"}

// modelSource names where zot knows a model from, and the load state a
// server gives it.
func modelSource(m ModelInfo) string {
	switch {
	case m.Source == SourceUser:
		return "user"
	case m.Source == SourceServer && m.State != "":
		return "server, " + cmp.Or(modelStates[m.State], m.State)
	case m.Source == SourceServer:
		return "server"
	}
	return "catalogue"
}
