package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"sync"
)

// Tool is something the model can call. Run must honour ctx: when it is
// cancelled the tool stops, cleans up whatever it started and returns.
// Bad arguments are the model's mistake, not a failure of the program:
// Run reports them as an error result and never panics.
type Tool interface {
	Name() string
	Description() string
	Schema() json.RawMessage
	Run(ctx context.Context, args json.RawMessage, progress func(line string)) ToolResult
}

// ToolResult is what a tool gives back to the model. Details is shown to the
// user and recorded but never sent to the model (e.g. which extension ran it).
type ToolResult struct {
	Content  []Block
	IsError  bool
	Details  string
	ExitCode *int
}

// ToolSpec is a tool as a provider describes it to the model.
type ToolSpec struct {
	Name        string
	Description string
	Schema      json.RawMessage
}

func errorResult(format string, args ...any) ToolResult {
	return ToolResult{Content: []Block{TextBlock(fmt.Sprintf(format, args...))}, IsError: true}
}

func textResult(text string) ToolResult {
	return ToolResult{Content: []Block{TextBlock(text)}}
}

// ToolRegistry holds the tools the model may call, grouped by where they came
// from ("builtin", "ext", "mcp:fs"…). A source registered earlier wins a name
// conflict with one registered later, so built-ins always win. It is safe for
// concurrent use: extensions reload and MCP servers arrive while a turn runs.
type ToolRegistry struct {
	mu      sync.RWMutex
	sources []toolSource
	allow   func(name string) bool
}

type toolSource struct {
	name  string
	tools []Tool
}

func NewToolRegistry() *ToolRegistry { return &ToolRegistry{} }

// SetSource adds a source of tools, or replaces the tools of one already
// present (keeping its precedence). It returns the names of this source's
// tools that an earlier source shadows.
func (r *ToolRegistry) SetSource(source string, tools []Tool) (shadowed []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	taken := map[string]bool{}
	replaced := false
	for i := range r.sources {
		if r.sources[i].name == source {
			r.sources[i].tools = tools
			replaced = true
			break
		}
		for _, t := range r.sources[i].tools {
			taken[t.Name()] = true
		}
	}
	if !replaced {
		r.sources = append(r.sources, toolSource{name: source, tools: tools})
	}
	for _, t := range tools {
		if taken[t.Name()] {
			shadowed = append(shadowed, t.Name())
		}
	}
	return shadowed
}

// SetFilter limits which tools the model sees; nil allows all.
func (r *ToolRegistry) SetFilter(allow func(name string) bool) {
	r.mu.Lock()
	r.allow = allow
	r.mu.Unlock()
}

// Lookup finds the tool the model would reach by this name.
func (r *ToolRegistry) Lookup(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.allow != nil && !r.allow(name) {
		return nil, false
	}
	for _, s := range r.sources {
		for _, t := range s.tools {
			if t.Name() == name {
				return t, true
			}
		}
	}
	return nil, false
}

// List returns the visible tools sorted by name: a stable order keeps the
// provider's prompt cache warm.
func (r *ToolRegistry) List() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	seen := map[string]bool{}
	var out []Tool
	for _, s := range r.sources {
		for _, t := range s.tools {
			n := t.Name()
			if seen[n] || (r.allow != nil && !r.allow(n)) {
				continue
			}
			seen[n] = true
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Specs describes the visible tools for a provider request.
func (r *ToolRegistry) Specs() []ToolSpec {
	var specs []ToolSpec
	for _, t := range r.List() {
		specs = append(specs, ToolSpec{Name: t.Name(), Description: t.Description(), Schema: t.Schema()})
	}
	return specs
}

// toolFilter builds the --tools allow-list: exact names or path.Match globs
// such as "mcp__fs__*".
func toolFilter(patterns []string) func(string) bool {
	return func(name string) bool {
		for _, p := range patterns {
			if ok, _ := path.Match(p, name); ok || p == name {
				return true
			}
		}
		return false
	}
}
