package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Tool search: when the tools' definitions would take more than a share
// of the model's context (a 14-tool MCP server fills half of a 2,048-token
// local model), a request carries the built-in tools whole and the MCP and
// extension tools as a list of names in the description of one more tool,
// tool_search, which the model calls to load the definitions it needs —
// as Claude Code's tool search does. A tool the model loaded (or called)
// goes whole in every later request of the conversation: which ones is
// read from the transcript's calls, so a resumed or rewound conversation
// has the tools it had.

// DefaultToolSearchShare is the share of the context window the tools'
// definitions may take before the MCP and extension tools go as a list.
const DefaultToolSearchShare = 0.25

// maxSearchMatches bounds the tools one search by words loads.
const maxSearchMatches = 5

// deferrable says whether a tool of source may go as a name in the list:
// MCP and extension tools; zot's own (built-in, skill) always go whole.
func deferrable(source string) bool {
	return strings.HasPrefix(source, "mcp:") || source == "ext"
}

// toolPlan is the tools of one request: those sent whole, and those only
// listed in tool_search (none when the search is off).
type toolPlan struct {
	send   []ToolSpec
	listed []ToolSpec
}

// planTools decides how the tools go to a model with a window of the
// given size: all whole while their definitions fit share of it (or when
// nothing can be listed, or a tool of the same name is registered), else
// as tool search, with the tools the transcript loaded whole.
func planTools(all []ToolSpec, window int, share float64, msgs []Message) toolPlan {
	share = cmp.Or(share, DefaultToolSearchShare)
	if window <= 0 || float64(toolTokens(all)) <= share*float64(window) ||
		!slices.ContainsFunc(all, func(t ToolSpec) bool { return deferrable(t.Source) }) ||
		slices.ContainsFunc(all, func(t ToolSpec) bool { return t.Name == toolSearchName }) {
		return toolPlan{send: all}
	}
	var p toolPlan
	for _, t := range all {
		if deferrable(t.Source) {
			p.listed = append(p.listed, t)
		}
	}
	loaded := loadedTools(msgs, p.listed)
	for _, t := range all {
		if !deferrable(t.Source) || loaded[t.Name] {
			p.send = append(p.send, t)
		}
	}
	p.send = append(p.send, toolSearchSpec(p.listed, loaded))
	return p
}

// loadedTools are the listed tools the conversation has loaded: those a
// tool_search call asked for, and those the model called.
func loadedTools(msgs []Message, listed []ToolSpec) map[string]bool {
	loaded := map[string]bool{}
	for _, m := range msgs {
		if m.Role != RoleAssistant {
			continue
		}
		for _, c := range m.ToolCalls() {
			if c.Name == toolSearchName {
				for _, t := range searchTools(c.Args, listed) {
					loaded[t.Name] = true
				}
			} else if slices.ContainsFunc(listed, func(t ToolSpec) bool { return t.Name == c.Name }) {
				loaded[c.Name] = true
			}
		}
	}
	return loaded
}

type toolSearchArgs struct {
	Names []string `json:"names"`
	Query string   `json:"query"`
}

// searchTools are the listed tools args ask for: each name given (without
// regard to case, with or without an MCP tool's prefix), then up to maxSearchMatches more whose name
// or description hold most of the query's words.
func searchTools(args json.RawMessage, listed []ToolSpec) []ToolSpec {
	var a toolSearchArgs
	json.Unmarshal(args, &a) // what does not decode asks for nothing
	var out []ToolSpec
	add := func(t ToolSpec) {
		if !slices.ContainsFunc(out, func(o ToolSpec) bool { return o.Name == t.Name }) {
			out = append(out, t)
		}
	}
	for _, n := range a.Names {
		// A model may leave out an MCP tool's mcp__server__ prefix.
		n = strings.ToLower(strings.TrimSpace(n))
		if i := slices.IndexFunc(listed, func(t ToolSpec) bool {
			name := strings.ToLower(t.Name)
			return n != "" && (name == n || strings.HasSuffix(name, "__"+n))
		}); i >= 0 {
			add(listed[i])
		}
	}
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(a.Query), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) >= 3 { // "a", "of", "to" match everything
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return out
	}
	type scored struct {
		t     ToolSpec
		score int
	}
	var hits []scored
	for _, t := range listed {
		text := strings.ToLower(t.Name + " " + t.Description)
		score := 0
		for _, w := range words {
			if strings.Contains(text, w) {
				score++
			}
		}
		if score > 0 {
			hits = append(hits, scored{t, score})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	for i := 0; i < len(hits) && i < maxSearchMatches; i++ {
		add(hits[i].t)
	}
	return out
}

// toolSearchSpec is tool_search's definition: the tools it can load, one
// line each, in its description.
func toolSearchSpec(listed []ToolSpec, loaded map[string]bool) ToolSpec {
	var b strings.Builder
	b.WriteString("Loads tools listed here by name only, to save context. Call it with the names of the tools you need " +
		"(or words to look for); their full definitions are in your tool list from your next step on, and you call them as any other tool.\n\nTools you can load:")
	for _, t := range listed {
		mark := ""
		if loaded[t.Name] {
			mark = " (loaded)"
		}
		fmt.Fprintf(&b, "\n- %s%s: %s", t.Name, mark, summaryLine(t.Description))
	}
	return ToolSpec{Name: toolSearchName, Description: b.String(), Source: "builtin", Schema: json.RawMessage(
		`{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"},"description":"the tools to load, by name"},` +
			`"query":{"type":"string","description":"words to look for in the tools' names and descriptions, when you do not know the names"}}}`)}
}

// summaryLine is a description's first sentence or line, at most 100
// bytes.
func summaryLine(desc string) string {
	desc = strings.TrimSpace(desc)
	if i := strings.IndexAny(desc, "\n"); i >= 0 {
		desc = desc[:i]
	}
	if i := strings.Index(desc, ". "); i >= 0 {
		desc = desc[:i+1]
	}
	return truncate(desc, 100)
}

// toolSearchTool runs tool_search for one request's list.
type toolSearchTool struct{ listed []ToolSpec }

func (t toolSearchTool) Name() string            { return toolSearchName }
func (t toolSearchTool) Description() string     { return toolSearchSpec(t.listed, nil).Description }
func (t toolSearchTool) Schema() json.RawMessage { return toolSearchSpec(nil, nil).Schema }

func (t toolSearchTool) Run(_ context.Context, args json.RawMessage, _ func(string)) ToolResult {
	found := searchTools(args, t.listed)
	if len(found) == 0 {
		var names []string
		for _, l := range t.listed {
			names = append(names, l.Name)
		}
		return errorResult("no tool matches %s; the tools you can load are: %s", truncate(string(args), 200), strings.Join(names, ", "))
	}
	var names []string
	for _, f := range found {
		names = append(names, f.Name)
	}
	return textResult(fmt.Sprintf("Loaded %s: their definitions are in your tool list from your next step on; call them as any other tool.", strings.Join(names, ", ")))
}
