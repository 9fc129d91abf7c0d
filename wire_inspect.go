package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// What the TUI's /permissions, /mcp and /status read of the rules, the
// MCP servers and trust: the setup's own state, translated.

// inspectHost is the setup as the TUI's tuiInspect. It is asked from the
// UI loop, which is also where plugTUI sets what it reads.
type inspectHost struct{ s *setup }

func (h inspectHost) Permissions() tuiPermissions {
	s := h.s
	var p tuiPermissions
	files, defaults := s.rules.InForce()
	p.Defaults = defaults
	for _, f := range files {
		tf := tuiRuleFile{File: f.File, Source: f.Source}
		for _, r := range f.Rules {
			where := fmt.Sprintf("line %d", r.Line)
			if r.Line == 0 {
				where = fmt.Sprintf("%s[%d]", r.Action, r.Index)
			}
			if r.Broken {
				where += ", cannot be read: it asks"
			}
			tf.Rules = append(tf.Rules, tuiRule{Action: r.Action, Text: r.Rule, Where: where})
		}
		p.Files = append(p.Files, tf)
	}
	for _, v := range s.validators {
		on := "every command"
		if len(v.Commands) > 0 {
			on = strings.Join(v.Commands, ", ")
		}
		p.Validators = append(p.Validators, fmt.Sprintf("%s: %s (%s)", v.Name, on, v.Source))
	}
	p.Skipped = append(p.Skipped, s.skippedGates...)
	if s.rules != nil {
		for _, pr := range s.rules.Problems {
			p.Notes = append(p.Notes, validatorText(pr.String()))
		}
	}
	if s.rules == nil {
		p.Skipped = append(p.Skipped, "no rules are loaded yet: they load once the directory's trust question is answered")
	}
	return p
}

func (h inspectHost) MCPServers() ([]tuiMCPServer, bool) {
	if h.s.mcp == nil {
		return nil, false
	}
	var out []tuiMCPServer
	for _, st := range h.s.mcp.Status() {
		src := st.Source // relative in the project, else absolute
		if rel, err := filepath.Rel(h.s.cwd, src); err == nil && filepath.IsLocal(rel) {
			src = rel
		}
		out = append(out, tuiMCPServer{Name: st.Name, Transport: st.Transport, Target: st.Target, State: string(st.State),
			Error: st.Error, Source: src, Tools: st.Tools})
	}
	return out, true
}

func (h inspectHost) Trust() tuiTrust {
	s := h.s
	tr := tuiTrust{Dir: s.trust.Dir, Running: s.projectOK, Warning: s.trust.Warning}
	switch {
	case len(s.trust.Entries) == 0:
		tr.Why = "nothing to trust: the directory brings no programs of its own"
	case s.trust.Trusted:
		tr.Why = "trusted: its own programs run (zot trust --revoke forgets it)"
	case s.opts.trustProject:
		tr.Why = "trusted for this run (--trust-project)"
	case s.projectOK:
		tr.Why = "trusted in this session's dialog"
	case s.trust.Declined:
		tr.Why = "not trusted: you went on without its programs (zot trust runs them)"
	default:
		tr.Why = "not trusted yet: the question is open"
	}
	if !s.projectOK {
		for _, e := range s.trust.Entries {
			tr.Skipped = append(tr.Skipped, oneLineText(e.Label()))
		}
	}
	return tr
}

// skipValidators notes, for /permissions, the project's validators.json
// when the directory is not trusted: guardTools did not read it.
func (s *setup) skipValidators() {
	project := filepath.Join(s.cwd, ".zot", "validators.json")
	if _, err := os.Stat(project); err == nil && !s.projectOK && !userOwns(s.home, project) {
		s.skippedGates = append(s.skippedGates, project+": not read: the directory is not trusted (zot trust)")
	}
}
