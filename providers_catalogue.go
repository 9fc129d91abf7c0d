package main

import (
	"strings"
	"sync"
)

// The model catalogue: what zot knows of each model (window, output
// limit, prices, reasoning), overlaid by the user's models.json and the
// models a configured server lists.

// ModelInfo is what zot knows of a model: limits and prices in USD per
// million tokens. Source says where it came from: "" for the built-in
// catalogue, "user" for $ZOT_HOME/models.json, "server" for the list the
// configured server serves. BaseURL, when set, is where the model is
// served (a models.json entry's baseUrl).
type ModelInfo struct {
	ID            string  `json:"id"`
	Provider      string  `json:"provider"`
	ContextWindow int     `json:"context_window"`
	MaxOutput     int     `json:"max_output"`
	Reasoning     bool    `json:"reasoning"`
	Input         float64 `json:"-"`
	Output        float64 `json:"-"`
	CacheRead     float64 `json:"-"`
	CacheWrite    float64 `json:"-"`
	Known         bool    `json:"-"`
	Name          string  `json:"-"`
	BaseURL       string  `json:"-"`
	Source        string  `json:"-"`
	// CompactThreshold is the share of the window that compacts the
	// conversation (models.json's compactThreshold); 0 leaves it to the
	// agent.
	CompactThreshold float64 `json:"-"`
}

// Cost prices one call's usage.
func (m ModelInfo) Cost(u Usage) float64 {
	return (float64(u.Input)*m.Input + float64(u.Output)*m.Output +
		float64(u.CacheRead)*m.CacheRead + float64(u.CacheWrite)*m.CacheWrite) / 1e6
}

// catalogue lists current models. Prices per million tokens: input, output,
// cache read, cache write.
var catalogue = []ModelInfo{
	{ID: "claude-opus-4-5", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 64000, Reasoning: true, Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	{ID: "claude-sonnet-4-5", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 64000, Reasoning: true, Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	{ID: "claude-haiku-4-5", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 64000, Reasoning: true, Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
	{ID: "claude-opus-4-1", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 32000, Reasoning: true, Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
	{ID: "claude-opus-4-0", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 32000, Reasoning: true, Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
	{ID: "claude-sonnet-4-0", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 64000, Reasoning: true, Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	{ID: "claude-3-7-sonnet-latest", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 64000, Reasoning: true, Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	{ID: "claude-3-5-haiku-latest", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 8192, Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1},
	{ID: "gpt-5.1", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Input: 1.25, Output: 10, CacheRead: 0.125},
	{ID: "gpt-5", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Input: 1.25, Output: 10, CacheRead: 0.125},
	{ID: "gpt-5-mini", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Input: 0.25, Output: 2, CacheRead: 0.025},
	{ID: "gpt-5-nano", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Input: 0.05, Output: 0.4, CacheRead: 0.005},
	{ID: "gpt-4.1", Provider: "openai", ContextWindow: 1047576, MaxOutput: 32768, Input: 2, Output: 8, CacheRead: 0.5},
	{ID: "gpt-4.1-mini", Provider: "openai", ContextWindow: 1047576, MaxOutput: 32768, Input: 0.4, Output: 1.6, CacheRead: 0.1},
	{ID: "gpt-4o", Provider: "openai", ContextWindow: 128000, MaxOutput: 16384, Input: 2.5, Output: 10, CacheRead: 1.25},
	{ID: "gpt-4o-mini", Provider: "openai", ContextWindow: 128000, MaxOutput: 16384, Input: 0.15, Output: 0.6, CacheRead: 0.075},
	{ID: "o3", Provider: "openai", ContextWindow: 200000, MaxOutput: 100000, Reasoning: true, Input: 2, Output: 8, CacheRead: 0.5},
	{ID: "o4-mini", Provider: "openai", ContextWindow: 200000, MaxOutput: 100000, Reasoning: true, Input: 1.1, Output: 4.4, CacheRead: 0.275},
}

// defaultModels is what each provider uses without --model. Local servers
// have no default: the user names the model they pulled.
var defaultModels = map[string]string{"anthropic": "claude-sonnet-4-5", "openai": "gpt-5"}

// Limits assumed for a model the catalogue does not know.
const (
	defaultContextWindow = 128000
	defaultMaxOutput     = 16384
)

// Model sources beside the built-in catalogue.
const (
	SourceUser   = "user"
	SourceServer = "server"
)

// learnedModels are the models zot learns at run time: the user's own
// (which win over the catalogue) and those the configured server lists
// (which only fill in models nobody else knows). The host sets them with
// SetUserModels and SetServerModels; lookups read them.
var learnedModels struct {
	sync.RWMutex
	user   []ModelInfo
	server map[string][]ModelInfo // by provider
	// measured are the windows servers report for the model they serve
	// (llama-server's n_ctx, the num_ctx zot sends ollama), by provider
	// and model: what the server does wins over what anyone says.
	measured map[[2]string]int
}

// SetMeasuredWindow records the context a server gives model's requests.
func SetMeasuredWindow(provider, model string, window int) {
	learnedModels.Lock()
	defer learnedModels.Unlock()
	if learnedModels.measured == nil {
		learnedModels.measured = map[[2]string]int{}
	}
	learnedModels.measured[[2]string{provider, model}] = window
}

// userWindow is the contextWindow the user's models.json gives model, or 0.
func userWindow(provider, model string) int {
	learnedModels.RLock()
	defer learnedModels.RUnlock()
	for _, u := range learnedModels.user {
		if u.Provider == provider && u.ID == model {
			return u.ContextWindow
		}
	}
	return 0
}

// SetUserModels replaces the user's models. An entry may leave limits
// and prices at zero: the catalogue's values for the same id stay.
func SetUserModels(ms []ModelInfo) {
	learnedModels.Lock()
	defer learnedModels.Unlock()
	learnedModels.user = append([]ModelInfo(nil), ms...)
}

// SetServerModels replaces the models the server of provider lists.
func SetServerModels(provider string, ms []ModelInfo) {
	learnedModels.Lock()
	defer learnedModels.Unlock()
	if learnedModels.server == nil {
		learnedModels.server = map[string][]ModelInfo{}
	}
	learnedModels.server[provider] = append([]ModelInfo(nil), ms...)
}

// lookupModel finds a model: the user's entry for it (over the catalogue's
// values), else the catalogue by exact id, then by the longest catalogue
// id it starts with (dated snapshots such as claude-sonnet-4-5-20250929),
// else what the server's model list said of it. A window the server
// reported for its requests wins over all of them. An unknown model still
// works: no cost, default limits.
func lookupModel(provider, id string) ModelInfo {
	info := lookupListedModel(provider, id)
	learnedModels.RLock()
	defer learnedModels.RUnlock()
	if w := learnedModels.measured[[2]string{provider, id}]; w > 0 {
		info.ContextWindow = w
	}
	return info
}

// lookupListedModel is lookupModel without what servers measured.
func lookupListedModel(provider, id string) ModelInfo {
	info, known := catalogueModel(provider, id)
	learnedModels.RLock()
	defer learnedModels.RUnlock()
	for _, u := range learnedModels.user {
		if u.Provider == provider && u.ID == id {
			return overlayModel(info, u)
		}
	}
	if known {
		return info
	}
	for _, m := range learnedModels.server[provider] {
		if m.ID == id {
			info.Source = SourceServer
			if m.ContextWindow > 0 {
				info.ContextWindow = m.ContextWindow
			}
			break
		}
	}
	return info
}

// catalogueModel is the catalogue's entry for id, or default limits.
func catalogueModel(provider, id string) (ModelInfo, bool) {
	var best ModelInfo
	for _, m := range catalogue {
		if m.Provider != provider {
			continue
		}
		if m.ID == id {
			m.Known = true
			return m, true
		}
		if strings.HasPrefix(id, m.ID+"-") && len(m.ID) > len(best.ID) {
			best = m
		}
	}
	if best.ID != "" {
		best.ID, best.Known = id, true
		return best, true
	}
	return ModelInfo{ID: id, Provider: provider, ContextWindow: defaultContextWindow, MaxOutput: defaultMaxOutput}, false
}

// overlayModel is base with what the user's entry u sets: its limits and
// prices where they are not zero, its name, endpoint and reasoning flag.
func overlayModel(base, u ModelInfo) ModelInfo {
	base.ID, base.Provider, base.Known, base.Source = u.ID, u.Provider, true, SourceUser
	base.Reasoning, base.Name, base.BaseURL, base.CompactThreshold = u.Reasoning, u.Name, u.BaseURL, u.CompactThreshold
	for _, f := range []struct {
		dst *int
		src int
	}{{&base.ContextWindow, u.ContextWindow}, {&base.MaxOutput, u.MaxOutput}} {
		if f.src > 0 {
			*f.dst = f.src
		}
	}
	for _, f := range []struct {
		dst *float64
		src float64
	}{{&base.Input, u.Input}, {&base.Output, u.Output}, {&base.CacheRead, u.CacheRead}, {&base.CacheWrite, u.CacheWrite}} {
		if f.src > 0 {
			*f.dst = f.src
		}
	}
	return base
}

// modelsFor lists the models of one provider: the catalogue's, with the
// user's entries over them and the user's own after them, then those the
// server lists that neither knows.
func modelsFor(provider string) []ModelInfo {
	var out []ModelInfo
	seen := map[string]bool{}
	for _, m := range catalogue {
		if m.Provider == provider {
			out = append(out, lookupModel(provider, m.ID))
			seen[m.ID] = true
		}
	}
	learnedModels.RLock()
	var extra []ModelInfo
	for _, u := range learnedModels.user {
		if u.Provider == provider && !seen[u.ID] {
			extra = append(extra, u)
			seen[u.ID] = true
		}
	}
	for _, m := range learnedModels.server[provider] {
		if !seen[m.ID] {
			extra = append(extra, m)
			seen[m.ID] = true
		}
	}
	learnedModels.RUnlock()
	for _, m := range extra {
		out = append(out, lookupModel(provider, m.ID))
	}
	return out
}
