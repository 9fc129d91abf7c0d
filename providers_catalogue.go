package main

import (
	"cmp"
	"slices"
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
	// State is the model's load state on a server that says (llama-server's
	// router: loaded, loading, unloaded, failed).
	State string `json:"-"`
	// Thinking is how the model takes --reasoning (ThinkingAdaptive,
	// ThinkingBudget); "" is the provider's own way: reasoning_effort for
	// OpenAI's APIs, adaptive thinking for a Claude model the catalogue
	// does not know (thinkingStyle).
	Thinking string `json:"-"`
	// Efforts are the --reasoning levels the model takes, space-separated;
	// "" when zot does not know, and sends the level asked for.
	Efforts string `json:"-"`
	// API is the OpenAI API that serves the model: APIResponses for the
	// models only the Responses API serves, "" for Chat Completions.
	API string `json:"-"`
	// CacheMinTokens is the shortest prefix Anthropic's prompt cache keeps
	// for the model; 0 is defaultCacheMinTokens.
	CacheMinTokens int `json:"-"`
}

// Thinking styles: how an Anthropic model is asked to think.
const (
	// ThinkingAdaptive is thinking {"type": "adaptive"} with the level as
	// output_config.effort: Claude 4.6 and later (Opus 4.7 and later take
	// nothing else).
	ThinkingAdaptive = "adaptive"
	// ThinkingBudget is thinking {"type": "enabled", "budget_tokens": N}:
	// the Claude models before 4.6.
	ThinkingBudget = "budget"
	// thinkingEffort is OpenAI's reasoning_effort (reasoning.effort in the
	// Responses API).
	thinkingEffort = "effort"
)

// APIResponses marks a model OpenAI serves only through /v1/responses.
const (
	APIResponses = "responses"
	APIChat      = "chat"
)

// --reasoning levels, from the least thinking to the most. ReasoningOff
// (or no level) asks for none.
const ReasoningOff = "off"

var reasoningLevels = []string{"low", "medium", "high", "xhigh", "max"}

// Cost prices one call's usage. A count below zero (a server that
// reported more cached tokens than it was sent) costs nothing rather
// than giving money back. A 1-hour cache write costs twice the input
// price (Anthropic's pricing page), a 5-minute one CacheWrite.
func (m ModelInfo) Cost(u Usage) float64 {
	n := func(v int) float64 { return float64(max(v, 0)) }
	long := min(max(u.CacheWrite1h, 0), max(u.CacheWrite, 0))
	return (n(u.Input)*m.Input + n(u.Output)*m.Output + n(u.CacheRead)*m.CacheRead +
		n(u.CacheWrite-long)*m.CacheWrite + n(long)*2*m.Input) / 1e6
}

// catalogue lists current models and the older ids that keep working.
// Prices per million tokens: input, output, cache read, cache write (the
// 5-minute write; a 1-hour write is twice the input price). Sources and
// the date they were read: docs/usage.md#the-model-catalogue.
var catalogue = []ModelInfo{
	{ID: "claude-opus-4-8", Provider: "anthropic", ContextWindow: 1000000, MaxOutput: 128000, Reasoning: true, Thinking: ThinkingAdaptive, Efforts: "low medium high xhigh max", CacheMinTokens: 1024, Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	{ID: "claude-opus-4-7", Provider: "anthropic", ContextWindow: 1000000, MaxOutput: 128000, Reasoning: true, Thinking: ThinkingAdaptive, Efforts: "low medium high xhigh max", CacheMinTokens: 2048, Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	{ID: "claude-opus-4-6", Provider: "anthropic", ContextWindow: 1000000, MaxOutput: 128000, Reasoning: true, Thinking: ThinkingAdaptive, Efforts: "low medium high max", CacheMinTokens: 4096, Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	{ID: "claude-sonnet-4-6", Provider: "anthropic", ContextWindow: 1000000, MaxOutput: 64000, Reasoning: true, Thinking: ThinkingAdaptive, Efforts: "low medium high max", CacheMinTokens: 1024, Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	{ID: "claude-haiku-4-5", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 64000, Reasoning: true, Thinking: ThinkingBudget, Efforts: "low medium high", CacheMinTokens: 4096, Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
	{ID: "claude-opus-4-5", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 64000, Reasoning: true, Thinking: ThinkingBudget, Efforts: "low medium high", CacheMinTokens: 4096, Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	{ID: "claude-sonnet-4-5", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 64000, Reasoning: true, Thinking: ThinkingBudget, Efforts: "low medium high", CacheMinTokens: 1024, Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	{ID: "claude-opus-4-1", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 32000, Reasoning: true, Thinking: ThinkingBudget, Efforts: "low medium high", CacheMinTokens: 1024, Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
	{ID: "claude-opus-4-0", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 32000, Reasoning: true, Thinking: ThinkingBudget, Efforts: "low medium high", CacheMinTokens: 1024, Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
	{ID: "claude-sonnet-4-0", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 64000, Reasoning: true, Thinking: ThinkingBudget, Efforts: "low medium high", CacheMinTokens: 1024, Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	{ID: "claude-3-7-sonnet-latest", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 64000, Reasoning: true, Thinking: ThinkingBudget, Efforts: "low medium high", CacheMinTokens: 1024, Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	{ID: "claude-3-5-haiku-latest", Provider: "anthropic", ContextWindow: 200000, MaxOutput: 8192, CacheMinTokens: 2048, Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1},
	{ID: "gpt-5.5", Provider: "openai", ContextWindow: 1050000, MaxOutput: 128000, Reasoning: true, Efforts: "none low medium high xhigh", Input: 5, Output: 30, CacheRead: 0.5},
	{ID: "gpt-5.4", Provider: "openai", ContextWindow: 1050000, MaxOutput: 128000, Reasoning: true, Efforts: "none low medium high xhigh", Input: 2.5, Output: 15, CacheRead: 0.25},
	{ID: "gpt-5.4-mini", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Efforts: "none low medium high xhigh", Input: 0.75, Output: 4.5, CacheRead: 0.075},
	{ID: "gpt-5.4-nano", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Efforts: "none low medium high xhigh", Input: 0.2, Output: 1.25, CacheRead: 0.02},
	{ID: "gpt-5.3-codex", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Efforts: "low medium high xhigh", API: APIResponses, Input: 1.75, Output: 14, CacheRead: 0.175},
	{ID: "gpt-5.2-codex", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Efforts: "low medium high xhigh", API: APIResponses, Input: 1.75, Output: 14, CacheRead: 0.175},
	{ID: "gpt-5.2", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Efforts: "none low medium high xhigh", Input: 1.75, Output: 14, CacheRead: 0.175},
	{ID: "gpt-5.1-codex-max", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Efforts: "low medium high xhigh", API: APIResponses, Input: 1.25, Output: 10, CacheRead: 0.125},
	{ID: "gpt-5.1-codex-mini", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Efforts: "low medium high", API: APIResponses, Input: 0.25, Output: 2, CacheRead: 0.025},
	{ID: "gpt-5.1-codex", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Efforts: "low medium high", API: APIResponses, Input: 1.25, Output: 10, CacheRead: 0.125},
	{ID: "gpt-5.1", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Efforts: "none low medium high", Input: 1.25, Output: 10, CacheRead: 0.125},
	{ID: "gpt-5-codex", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Efforts: "low medium high", API: APIResponses, Input: 1.25, Output: 10, CacheRead: 0.125},
	{ID: "gpt-5", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Efforts: "minimal low medium high", Input: 1.25, Output: 10, CacheRead: 0.125},
	{ID: "gpt-5-mini", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Efforts: "minimal low medium high", Input: 0.25, Output: 2, CacheRead: 0.025},
	{ID: "gpt-5-nano", Provider: "openai", ContextWindow: 400000, MaxOutput: 128000, Reasoning: true, Efforts: "minimal low medium high", Input: 0.05, Output: 0.4, CacheRead: 0.005},
	{ID: "gpt-4.1", Provider: "openai", ContextWindow: 1047576, MaxOutput: 32768, Input: 2, Output: 8, CacheRead: 0.5},
	{ID: "gpt-4.1-mini", Provider: "openai", ContextWindow: 1047576, MaxOutput: 32768, Input: 0.4, Output: 1.6, CacheRead: 0.1},
	{ID: "gpt-4o", Provider: "openai", ContextWindow: 128000, MaxOutput: 16384, Input: 2.5, Output: 10, CacheRead: 1.25},
	{ID: "gpt-4o-mini", Provider: "openai", ContextWindow: 128000, MaxOutput: 16384, Input: 0.15, Output: 0.6, CacheRead: 0.075},
	{ID: "o3", Provider: "openai", ContextWindow: 200000, MaxOutput: 100000, Reasoning: true, Efforts: "low medium high", Input: 2, Output: 8, CacheRead: 0.5},
	{ID: "o4-mini", Provider: "openai", ContextWindow: 200000, MaxOutput: 100000, Reasoning: true, Efforts: "low medium high", Input: 1.1, Output: 4.4, CacheRead: 0.275},
}

// defaultModels is what each provider uses without --model. Local servers
// have no default: the user names the model they pulled.
var defaultModels = map[string]string{"anthropic": "claude-sonnet-4-6", "openai": "gpt-5.5"}

// defaultCacheMinTokens is the cache minimum assumed for a Claude model
// the catalogue does not know: the lowest any current model has, so that
// a breakpoint is never left out where it might have worked.
const defaultCacheMinTokens = 1024

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
// values), else the catalogue by exact id or as a dated snapshot of a
// catalogue id (snapshotOf), else what the server's model list said of it.
// A window the server reported for its requests wins over all of them. An
// unknown model still works: no cost, default limits.
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
			info.Source, info.State = SourceServer, m.State
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
	for _, m := range catalogue {
		if m.Provider == provider && (m.ID == id || snapshotOf(id, m.ID)) {
			m.ID, m.Known = id, true
			return m, true
		}
	}
	return ModelInfo{ID: id, Provider: provider, ContextWindow: defaultContextWindow, MaxOutput: defaultMaxOutput}, false
}

// snapshotOf reports whether id is a dated snapshot of the catalogue's
// alias: claude-sonnet-4-5-20250929 of claude-sonnet-4-5,
// claude-sonnet-4-20250514 of claude-sonnet-4-0,
// claude-3-7-sonnet-20250219 of claude-3-7-sonnet-latest, gpt-4o-2024-08-06
// of gpt-4o. Only a date counts: claude-opus-4-9 is no snapshot of
// claude-opus-4-0, and a model the catalogue does not know must not take
// the thinking style or the API of an older one.
func snapshotOf(id, alias string) bool {
	base := strings.TrimSuffix(strings.TrimSuffix(alias, "-latest"), "-0")
	rest, ok := strings.CutPrefix(id, base+"-")
	if !ok {
		return false
	}
	digits := strings.ReplaceAll(rest, "-", "")
	if len(digits) != 8 || (len(rest) != 8 && len(rest) != 10) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(rest) == 8 || (rest[4] == '-' && rest[7] == '-')
}

// thinkingStyle is how a request to provider asks info to think: "" for
// a model the catalogue knows cannot, the model's own style when known,
// else adaptive thinking for Anthropic (every Claude model since 4.6
// takes it, and Opus 4.7 and later take nothing else) and
// reasoning_effort for the OpenAI APIs.
func thinkingStyle(provider string, info ModelInfo) string {
	switch {
	case info.Known && !info.Reasoning:
		return ""
	case info.Thinking != "":
		return info.Thinking
	case provider == "anthropic":
		return ThinkingAdaptive
	}
	return thinkingEffort
}

// reasoningFor is the --reasoning level to send: none when off or for a
// model the catalogue knows cannot reason (the API would refuse the
// request); the level asked for when the model takes it or zot does not
// know which levels it takes (a local server's model is the user's call);
// else the highest level below it the model takes (xhigh on a model whose
// top is high), or its lowest when none is below.
func reasoningFor(info ModelInfo, level string) string {
	if level == "" || level == ReasoningOff || (info.Known && !info.Reasoning) {
		return ""
	}
	takes := strings.Fields(info.Efforts)
	if len(takes) == 0 || slices.Contains(takes, level) {
		return level
	}
	best := ""
	for _, l := range reasoningLevels {
		if l == level {
			break
		}
		if slices.Contains(takes, l) {
			best = l
		}
	}
	if best == "" {
		for _, l := range reasoningLevels {
			if slices.Contains(takes, l) {
				return l
			}
		}
	}
	return best
}

// overlayModel is base with what the user's entry u sets: its limits and
// prices where they are not zero, its name, endpoint and reasoning flag,
// and its thinking style and API where it names them.
func overlayModel(base, u ModelInfo) ModelInfo {
	base.ID, base.Provider, base.Known, base.Source = u.ID, u.Provider, true, SourceUser
	base.Reasoning, base.Name, base.BaseURL, base.CompactThreshold = u.Reasoning, u.Name, u.BaseURL, u.CompactThreshold
	base.Thinking, base.API = cmp.Or(u.Thinking, base.Thinking), cmp.Or(u.API, base.API)
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
