package main

import (
	"context"
	"fmt"
	"strings"
)

// Rescue: when a prompt fails because its provider is unavailable (a
// refused key, a rate limit, a server error or a broken connection, after
// the retries), the TUI offers the models of the other providers the user
// can reach; choosing one switches to it and asks again from the
// transcript as the failure left it, so the prompt is not sent twice.
// Failures that another provider would share (a bad request, a prompt too
// long for the context window) stay plain errors.

// rescueChoice is a model of another provider that a failed prompt may be
// retried with.
type rescueChoice struct {
	provider, model, why string
}

// rescueProviders are the providers a rescue may switch to, in the order
// offered.
var rescueProviders = []string{"anthropic", "openai", "ollama"}

// offerRescue opens the rescue picker after a prompt failed with err, when
// the failure is the provider's and another provider is at hand. It
// reports whether it did; while the picker is open, queued prompts wait.
func (t *TUI) offerRescue(err error) bool {
	if !Unavailable(err) {
		return false
	}
	choices := t.rescueChoices()
	if len(choices) == 0 {
		t.logf(sDim, "no other provider is set up to retry with (/login adds a key; --provider ollama uses a local server)")
		return false
	}
	nameW := 0
	for _, c := range choices {
		nameW = max(nameW, stringWidth(c.provider+"/"+c.model))
	}
	var items []string
	for _, c := range choices {
		name := c.provider + "/" + c.model
		items = append(items, name+strings.Repeat(" ", nameW-stringWidth(name))+"  "+c.why)
	}
	t.pushDialog(&pickerDialog{
		title:  t.provider + " is unavailable: retry this prompt with (esc keeps the error)",
		items:  items,
		pick:   func(t *TUI, i int) { t.rescue(choices[i]) },
		cancel: (*TUI).startQueued,
	})
	return true
}

// rescueChoices lists the models of every other provider zot can reach:
// one with a key (flag, environment, auth.json) or a base URL the user
// set, and the local server when a model for it is known. The model the
// user last chose for a provider comes first, then its default, then the
// rest of the catalogue.
func (t *TUI) rescueChoices() []rescueChoice {
	cfg, _ := loadConfig(t.cfg.Home)
	var out []rescueChoice
	for _, p := range rescueProviders {
		if p == t.provider {
			continue
		}
		key, _, err := t.keyFor(p)
		reachable := err == nil && (key != "" || t.baseURLFor(p) != "" || p == "ollama")
		if !reachable {
			continue
		}
		seen := map[string]bool{}
		add := func(id, why string) {
			if id != "" && !seen[id] {
				seen[id] = true
				out = append(out, rescueChoice{p, id, why})
			}
		}
		if cfg.Provider == p {
			add(cfg.Model, "last used")
		}
		add(defaultModels[p], "default")
		for _, m := range modelsFor(p) {
			add(m.ID, fmt.Sprintf("%dk context", m.ContextWindow/1000))
		}
	}
	return out
}

// rescue switches to c's provider and model for the rest of the session
// (config.json keeps the user's own choice) and asks again.
func (t *TUI) rescue(c rescueChoice) {
	if !t.useProvider("rescue", c.provider, c.model) {
		t.startQueued()
		return
	}
	t.logf(fgCyan, "↻ retrying with %s/%s", c.provider, c.model)
	t.beginRun(func(ctx context.Context, sink Sink) error { return t.agent.Continue(ctx, sink) })
	t.run.rescuable = true
}

// startQueued starts the next queued prompt when nothing runs.
func (t *TUI) startQueued() {
	if t.run == nil && len(t.queue) > 0 {
		q := t.queue[0]
		t.queue = t.queue[1:]
		t.startPrompt(q)
	}
}
