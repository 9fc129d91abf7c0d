package main

import "fmt"

// The rules in force, as a host lists them (the TUI's /permissions): the
// rules the gate holds now, file by file, and what each source does with
// a call no rule matches. It reads what LoadPermissionRules kept, so it
// lists exactly what decides: a project's allow rules the user has not
// trusted are not there (Problems says why).

// PermissionFileRules are one file's rules that apply, in the order the
// file gives them (Claude Code: deny, ask, allow).
type PermissionFileRules struct {
	File   string
	Source string // "Claude Code" or "runok"
	Rules  []PermissionRuleLine
}

// PermissionRuleLine is one rule as written; Line is 0 where the format
// has no line (Claude Code's JSON lists: Index is its place there).
type PermissionRuleLine struct {
	Action, Rule string
	Line, Index  int
	Broken       bool // it cannot be read: what it would allow is asked
}

// InForce lists the rules that apply, file by file (every file read, those
// without a rule too), and the defaults: what each source does with a
// call none of its rules matches.
func (p *PermissionRules) InForce() (files []PermissionFileRules, defaults []string) {
	if p == nil {
		return nil, nil
	}
	at := map[string]int{}
	add := func(file, source string, r PermissionRuleLine) {
		i, ok := at[file]
		if !ok {
			i = len(files)
			at[file] = i
			files = append(files, PermissionFileRules{File: file, Source: source})
		}
		files[i].Rules = append(files[i].Rules, r)
	}
	if c := p.claude; c != nil {
		for _, r := range c.rules {
			add(r.file, "Claude Code", PermissionRuleLine{Action: r.action, Rule: r.text, Index: r.index, Broken: r.broken})
		}
		switch m := c.hostMode.Load(); {
		case m != nil:
			defaults = append(defaults, fmt.Sprintf("Claude Code rules: a call no rule matches goes as the session's mode (%s) says", *m))
		case c.modeFrom != "":
			defaults = append(defaults, fmt.Sprintf("Claude Code rules: a call no rule matches goes as defaultMode %s (%s) says", c.mode, c.modeFrom))
		case !c.hostOnly:
			defaults = append(defaults, "Claude Code rules: a call no rule matches goes as defaultMode default says (commands and edits ask)")
		}
	}
	if rr := p.runok; rr != nil {
		for _, cfg := range []*runokConfig{rr.full, rr.untrusted} {
			if cfg == nil {
				continue
			}
			for _, r := range cfg.rules {
				add(r.src.file, "runok", PermissionRuleLine{Action: r.action, Rule: r.src.text, Line: r.src.line})
			}
		}
		d := "runok: a command no rule matches: " + defaultOf(rr.full)
		if src := rr.full.deflt; src != nil {
			d += " (" + src.where() + ")"
		} else {
			d += " (runok's own default)"
		}
		defaults = append(defaults, d)
	}
	for _, f := range p.Files {
		if _, ok := at[f]; !ok {
			at[f] = len(files)
			files = append(files, PermissionFileRules{File: f})
		}
	}
	return files, defaults
}
