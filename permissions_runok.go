package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// runok.yml rules, read the way runok reads them (runok-docs/configuration
// and rule-evaluation): the global file and its local override under
// $XDG_CONFIG_HOME/runok, the project's pair found walking up from the
// working directory (stopping at $HOME), each with the files it extends
// from local paths, merged in that order; rules, defaults.action,
// message, fix_suggestion, and the definitions (paths, wrappers, vars,
// aliases, flag groups). Every matching rule is collected and the most
// restrictive wins (explicit deny wins); a command no rule matches gets
// defaults.action, ask when unset. What zot leaves out fails closed: a
// rule's `when` is not evaluated (deny and ask rules with one ask, allow
// rules with one do not match), remote presets are never fetched (while an
// extends is missing, what the rules would allow is asked), sandbox keys
// are ignored and reported.

const (
	runokMaxFile      = 1 << 20 // bytes of one runok.yml
	runokMaxExtends   = 10      // levels of extends, as runok
	runokMaxWrapDepth = 10      // wrappers inside wrappers, as runok
	runokMaxAliases   = 5       // alias expansions in a chain, as runok
	// runokMaxExpansions bounds the patterns one rule expands into
	// (aliases and pattern variables multiply), so that a file cannot make
	// loading it take all memory.
	runokMaxExpansions = 1000
)

// runokSrc is a piece of configuration and where it is written.
type runokSrc struct {
	text string
	file string
	line int
}

func (s runokSrc) where() string { return fmt.Sprintf("%s:%d", s.file, s.line) }

// runokRule is one entry of rules.
type runokRule struct {
	action  string // allow, deny, ask
	src     runokSrc
	message string
	fix     string
	when    bool // has a when clause, which zot does not evaluate
	pats    []*runokPattern
}

func (r *runokRule) String() string { return fmt.Sprintf("%s: %s", r.action, quoteRule(r.src.text)) }

func quoteRule(s string) string {
	if !strings.Contains(s, "'") {
		return "'" + s + "'"
	}
	return fmt.Sprintf("%q", s)
}

type runokVarDef struct {
	src    runokSrc
	typ    string // literal, path, pattern
	values []runokVarValue
	raw    []string // pattern values as written
}

type runokRequirePath struct {
	enabled bool
	action  string
	ignore  []string
	src     runokSrc
}

// runokFragment is one file merged with the files it extends: the
// configuration before its patterns are parsed.
type runokFragment struct {
	rules      []*runokRule
	deflt      *runokSrc // defaults.action
	wrappers   []runokSrc
	paths      map[string][]string
	pathSrc    map[string]runokSrc
	vars       map[string]*runokVarDef
	aliases    map[string][]runokSrc
	flagGroups map[string]runokSrc
	require    *runokRequirePath
	// missing says why rules this configuration would have are unknown: an
	// extends that cannot be read, a file that does not parse, a rule zot
	// cannot read. While it is not empty, allow is ask.
	missing  []string
	files    []string
	problems []PermissionProblem
}

func newRunokFragment() *runokFragment {
	return &runokFragment{paths: map[string][]string{}, pathSrc: map[string]runokSrc{}, vars: map[string]*runokVarDef{},
		aliases: map[string][]runokSrc{}, flagGroups: map[string]runokSrc{}}
}

// merge puts o on top of f, with runok's merge semantics: rules, wrappers
// and extends append; defaults override; paths append per key. vars,
// aliases and flag groups, which runok's documentation does not cover, are
// replaced per key (docs/choices.md).
func (f *runokFragment) merge(o *runokFragment) {
	f.rules = append(f.rules, o.rules...)
	if o.deflt != nil {
		f.deflt = o.deflt
	}
	f.wrappers = append(f.wrappers, o.wrappers...)
	for _, k := range sortedKeys(o.paths) {
		for _, p := range o.paths[k] {
			if !slices.Contains(f.paths[k], p) {
				f.paths[k] = append(f.paths[k], p)
			}
		}
		if _, ok := f.pathSrc[k]; !ok {
			f.pathSrc[k] = o.pathSrc[k]
		}
	}
	for k, v := range o.vars {
		f.vars[k] = v
	}
	for k, v := range o.aliases {
		f.aliases[k] = v
	}
	for k, v := range o.flagGroups {
		f.flagGroups[k] = v
	}
	if o.require != nil {
		f.require = o.require
	}
	f.missing = append(f.missing, o.missing...)
	f.files = append(f.files, o.files...)
	f.problems = append(f.problems, o.problems...)
}

// runokLayer is one of the four files runok merges, with what it extends.
type runokLayer struct {
	name    string // "global", "global local", "project", "project local"
	path    string
	project bool
	frag    *runokFragment
}

// findRunokFiles lists the layers that exist, in merge order.
func findRunokFiles(src PermissionSources) []runokLayer {
	pick := func(dir, base string) string {
		for _, ext := range []string{".yml", ".yaml"} {
			p := filepath.Join(dir, base+ext)
			if _, err := os.Lstat(p); err == nil {
				return p
			}
		}
		return ""
	}
	var out []runokLayer
	globalDir := ""
	if src.ConfigHome != "" {
		globalDir = filepath.Join(src.ConfigHome, "runok")
		if p := pick(globalDir, "runok"); p != "" {
			out = append(out, runokLayer{name: "global", path: p})
		}
		if p := pick(globalDir, "runok.local"); p != "" {
			out = append(out, runokLayer{name: "global local", path: p})
		}
	}
	if dir := runokProjectDir(src.Cwd, src.UserHome); dir != "" && dir != globalDir {
		for _, l := range []runokLayer{{name: "project", path: pick(dir, "runok")}, {name: "project local", path: pick(dir, "runok.local")}} {
			if l.path != "" {
				l.project = src.UserOwns == nil || !src.UserOwns(l.path)
				out = append(out, l)
			}
		}
	}
	return out
}

// runokProjectDir is the nearest directory from cwd up that holds a
// runok.yml, runok.yaml, runok.local.yml or runok.local.yaml; the walk
// stops at home, whose own files are not a project's.
func runokProjectDir(cwd, home string) string {
	for dir := filepath.Clean(cwd); ; {
		if home != "" && dir == filepath.Clean(home) {
			return ""
		}
		for _, n := range runokNames {
			if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// runokNames are the names of a directory's runok files, in the order
// runok looks for them.
var runokNames = []string{"runok.yml", "runok.yaml", "runok.local.yml", "runok.local.yaml"}

// runokFilesFor are the project runok files a session in cwd reads or
// would read once they exist: every name in every directory from cwd up to
// the one runokProjectDir finds (to home, or the root, when none) — a new
// one below that directory shadows it.
func runokFilesFor(cwd, home string) []string {
	stop := runokProjectDir(cwd, home)
	var out []string
	for dir := filepath.Clean(cwd); ; {
		if home != "" && dir == filepath.Clean(home) {
			return out
		}
		for _, n := range runokNames {
			out = append(out, filepath.Join(dir, n))
		}
		parent := filepath.Dir(dir)
		if dir == stop || parent == dir {
			return out
		}
		dir = parent
	}
}

// runokLoader reads files and what they extend.
type runokLoader struct {
	home string
}

// load reads one file and, depth first, the files it extends: those merge
// first, in order, and the file itself on top. chain holds the files open
// above it, for cycles.
func (ld *runokLoader) load(path string, chain []string) *runokFragment {
	f := newRunokFragment()
	f.files = []string{path}
	fail := func(line int, format string, args ...any) *runokFragment {
		msg := fmt.Sprintf(format, args...)
		f.problems = append(f.problems, PermissionProblem{File: path, Line: line, Level: problemError, Msg: msg + "; until it is fixed, what these rules would allow is asked"})
		f.missing = append(f.missing, fmt.Sprintf("%s cannot be used (%s)", path, msg))
		return f
	}
	data, err := readUntrustedFile(path, runokMaxFile)
	if err != nil {
		return fail(0, "%v", err)
	}
	doc, err := parseYAMLDocument(path, data)
	if err != nil {
		var ye *yamlError
		if errors.As(err, &ye) {
			return fail(ye.line, "%s", ye.msg)
		}
		return fail(0, "%v", err)
	}
	base := newRunokFragment()
	if ext := doc.Map["extends"]; ext != nil {
		refs, ok := yamlStrings(ext)
		if !ok {
			return fail(doc.KeyLine["extends"], "extends must be a list of file references")
		}
		for i, ref := range refs {
			line := doc.KeyLine["extends"]
			if ext.Kind == yamlList {
				line = ext.List[i].Line
			}
			base.merge(ld.extend(path, ref, line, append(chain, path)))
		}
	}
	own := ld.readFile(path, doc)
	base.merge(own)
	base.files = append([]string{path}, slices.DeleteFunc(base.files, func(s string) bool { return s == path })...)
	return base
}

// extend loads one extends reference of from.
func (ld *runokLoader) extend(from, ref string, line int, chain []string) *runokFragment {
	missing := func(level, format string, args ...any) *runokFragment {
		f := newRunokFragment()
		msg := fmt.Sprintf(format, args...)
		f.problems = append(f.problems, PermissionProblem{File: from, Line: line, Level: level, Msg: fmt.Sprintf("extends %q: %s; while it is missing, what these rules would allow is asked", ref, msg)})
		f.missing = append(f.missing, fmt.Sprintf("extends %q (%s:%d) %s", ref, from, line, msg))
		return f
	}
	switch {
	case strings.HasPrefix(ref, "github:") || strings.HasPrefix(ref, "https://") || strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "git@"):
		return missing(problemError, "is a remote preset, which zot never fetches (clone it and extend the local copy)")
	case len(chain) > runokMaxExtends:
		return missing(problemError, "goes deeper than %d levels of extends", runokMaxExtends)
	}
	root, rel := filepath.Dir(from), ref
	switch {
	case strings.HasPrefix(ref, "~/"):
		root, rel = ld.home, ref[2:]
	case filepath.IsAbs(ref):
		root, rel = "", ref
	}
	if root != "" {
		if strings.HasPrefix(ref, "~/") && ld.home == "" {
			return missing(problemError, "cannot be found: the home directory is unknown")
		}
		clean := filepath.Clean(rel)
		if clean == ".." || strings.HasPrefix(clean, "../") {
			return missing(problemError, "leaves the directory it is relative to (..), which runok refuses")
		}
		rel = filepath.Join(root, clean)
	}
	path := filepath.Clean(rel)
	if slices.Contains(chain, path) {
		return missing(problemError, "extends itself (a cycle through %s)", strings.Join(chain, " → "))
	}
	if _, err := os.Stat(path); err != nil {
		return missing(problemError, "cannot be read: %v", errors.Unwrap(err))
	}
	return ld.load(path, chain)
}

// readFile reads one file's own keys (extends aside).
func (ld *runokLoader) readFile(path string, doc *yamlNode) *runokFragment {
	f := newRunokFragment()
	note := func(line int, level, format string, args ...any) {
		f.problems = append(f.problems, PermissionProblem{File: path, Line: line, Level: level, Msg: fmt.Sprintf(format, args...)})
	}
	broken := func(line int, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		note(line, problemError, "%s; until it is fixed, what these rules would allow is asked", msg)
		f.missing = append(f.missing, fmt.Sprintf("%s:%d: %s", path, line, msg))
	}
	for _, k := range doc.Keys {
		switch k {
		case "extends", "rules", "defaults", "definitions":
		case "required_runok_version", "audit", "tests":
			// runok's own concerns: the version of runok, its audit log, runok test.
		case "experimental":
		default:
			note(doc.KeyLine[k], problemNote, "unknown key %q ignored", k)
		}
	}
	if d := doc.Map["defaults"]; d != nil {
		if d.Kind != yamlMap {
			broken(doc.KeyLine["defaults"], "defaults must be a map (action: ask)")
		} else {
			for _, k := range d.Keys {
				switch k {
				case "action":
					a := d.Map[k]
					if a.Kind != yamlScalar || !isRuleAction(a.Str) {
						broken(d.KeyLine[k], "defaults.action must be allow, ask or deny")
						continue
					}
					f.deflt = &runokSrc{text: a.Str, file: path, line: d.KeyLine[k]}
				case "sandbox":
					note(d.KeyLine[k], problemNote, "defaults.sandbox %s", runokSandboxIgnored)
				default:
					note(d.KeyLine[k], problemNote, "unknown key defaults.%s ignored", k)
				}
			}
		}
	}
	if r := doc.Map["rules"]; r != nil {
		if r.Kind != yamlList {
			broken(doc.KeyLine["rules"], "rules must be a list of {allow|deny|ask: pattern}")
		} else {
			for i, entry := range r.List {
				f.readRule(path, i, entry, note, broken)
			}
		}
	}
	if d := doc.Map["definitions"]; d != nil {
		if d.Kind != yamlMap {
			broken(doc.KeyLine["definitions"], "definitions must be a map")
		} else {
			f.readDefinitions(path, d, ld.home, note, broken)
		}
	}
	if e := doc.Map["experimental"]; e != nil && e.Kind == yamlMap {
		for _, k := range e.Keys {
			if k != "require_command_in_path" {
				note(e.KeyLine[k], problemNote, "experimental.%s is not supported by zot and is ignored", k)
				continue
			}
			f.readRequirePath(path, e.Map[k], note, broken)
		}
	}
	return f
}

func isRuleAction(s string) bool { return s == "allow" || s == "deny" || s == "ask" }

// runokSandboxIgnored is said of every sandbox setting.
const runokSandboxIgnored = "ignored: zot does not apply runok's sandbox presets (its own sandbox is --sandbox)"

// readRule reads one entry of rules.
func (f *runokFragment) readRule(path string, i int, entry *yamlNode, note func(int, string, string, ...any), broken func(int, string, ...any)) {
	where := fmt.Sprintf("rule %d", i+1)
	if entry.Kind != yamlMap {
		broken(entry.Line, "%s: want a map such as {allow: 'git status'}", where)
		return
	}
	r := &runokRule{}
	for _, k := range entry.Keys {
		v := entry.Map[k]
		str := func() (string, bool) {
			if v.Kind != yamlScalar {
				broken(entry.KeyLine[k], "%s: %s must be text", where, k)
				return "", false
			}
			return v.Str, true
		}
		switch k {
		case "allow", "deny", "ask":
			s, ok := str()
			if !ok {
				return
			}
			if r.action != "" {
				broken(entry.KeyLine[k], "%s: has both %s and %s; a rule has exactly one", where, r.action, k)
				return
			}
			r.action, r.src = k, runokSrc{text: s, file: path, line: entry.KeyLine[k]}
		case "message":
			r.message, _ = str()
		case "fix_suggestion":
			r.fix, _ = str()
		case "when":
			r.when = true
		case "sandbox":
			note(entry.KeyLine[k], problemNote, "%s: sandbox %q %s", where, v.Str, runokSandboxIgnored)
		case "tests":
		default:
			note(entry.KeyLine[k], problemNote, "%s: unknown key %q ignored", where, k)
		}
	}
	if r.action == "" {
		broken(entry.Line, "%s: has none of allow, deny, ask", where)
		return
	}
	f.rules = append(f.rules, r)
}

// readDefinitions reads definitions: paths resolve against the file's
// directory; sandbox presets are ignored.
func (f *runokFragment) readDefinitions(path string, d *yamlNode, home string, note func(int, string, string, ...any), broken func(int, string, ...any)) {
	dir := filepath.Dir(path)
	for _, k := range d.Keys {
		v, line := d.Map[k], d.KeyLine[k]
		switch k {
		case "sandbox":
			note(line, problemNote, "definitions.sandbox %s", runokSandboxIgnored)
		case "wrappers":
			list, ok := yamlStrings(v)
			if !ok {
				broken(line, "definitions.wrappers must be a list of patterns")
				continue
			}
			for i, w := range list {
				l := line
				if v.Kind == yamlList {
					l = v.List[i].Line
				}
				f.wrappers = append(f.wrappers, runokSrc{text: w, file: path, line: l})
			}
		case "paths":
			if v.Kind != yamlMap {
				broken(line, "definitions.paths must map names to lists of paths")
				continue
			}
			for _, name := range v.Keys {
				list, ok := yamlStrings(v.Map[name])
				if !ok {
					broken(v.KeyLine[name], "definitions.paths.%s must be a list of paths", name)
					continue
				}
				for _, p := range list {
					if strings.Contains(p, "<path:") {
						broken(v.KeyLine[name], "definitions.paths.%s: <path:…> references are not allowed inside definitions.paths", name)
						continue
					}
					f.paths[name] = append(f.paths[name], resolveRunokPath(p, dir, home))
				}
				f.pathSrc[name] = runokSrc{text: name, file: path, line: v.KeyLine[name]}
			}
		case "vars":
			if v.Kind != yamlMap {
				broken(line, "definitions.vars must map names to {type, values}")
				continue
			}
			for _, name := range v.Keys {
				if def := readRunokVar(path, name, v.Map[name], v.KeyLine[name], dir, broken); def != nil {
					f.vars[name] = def
				}
			}
		case "aliases":
			if v.Kind != yamlMap {
				broken(line, "definitions.aliases must map names to patterns")
				continue
			}
			for _, name := range v.Keys {
				list, ok := yamlStrings(v.Map[name])
				if !ok || len(list) == 0 {
					broken(v.KeyLine[name], "definitions.aliases.%s must be a pattern or a list of patterns", name)
					continue
				}
				var srcs []runokSrc
				for _, p := range list {
					srcs = append(srcs, runokSrc{text: p, file: path, line: v.KeyLine[name]})
				}
				f.aliases[name] = srcs
			}
		case "flag_groups":
			if v.Kind != yamlMap {
				broken(line, "definitions.flag_groups must map names to patterns such as '-f|--field *'")
				continue
			}
			for _, name := range v.Keys {
				g := v.Map[name]
				if g.Kind != yamlScalar {
					broken(v.KeyLine[name], "definitions.flag_groups.%s must be a pattern such as '-f|--field *'", name)
					continue
				}
				f.flagGroups[name] = runokSrc{text: g.Str, file: path, line: v.KeyLine[name]}
			}
		default:
			note(line, problemNote, "unknown key definitions.%s ignored", k)
		}
	}
}

func readRunokVar(path, name string, n *yamlNode, line int, dir string, broken func(int, string, ...any)) *runokVarDef {
	if n.Kind != yamlMap {
		broken(line, "definitions.vars.%s must be a map with values", name)
		return nil
	}
	def := &runokVarDef{src: runokSrc{text: name, file: path, line: line}, typ: "literal"}
	if t := n.Map["type"]; t != nil {
		def.typ = t.Str
	}
	if !slices.Contains([]string{"literal", "path", "pattern"}, def.typ) {
		broken(n.KeyLine["type"], "definitions.vars.%s: type must be literal, path or pattern", name)
		return nil
	}
	vals := n.Map["values"]
	if vals == nil || vals.Kind != yamlList {
		broken(line, "definitions.vars.%s needs a list of values", name)
		return nil
	}
	for _, item := range vals.List {
		typ, text := def.typ, item.Str
		if item.Kind == yamlMap {
			if t := item.Map["type"]; t != nil {
				typ = t.Str
			}
			if v := item.Map["value"]; v != nil {
				text = v.Str
			}
		} else if item.Kind != yamlScalar {
			broken(item.Line, "definitions.vars.%s: a value must be text or {type, value}", name)
			return nil
		}
		if strings.Contains(text, "<") && typ != "pattern" && (strings.Contains(text, "<var:") || strings.Contains(text, "<path:")) {
			broken(item.Line, "definitions.vars.%s: a %s value cannot refer to <var:…> or <path:…>", name, typ)
			return nil
		}
		switch typ {
		case "pattern":
			def.raw = append(def.raw, text)
		case "path":
			def.values = append(def.values, runokVarValue{typ: "path", words: []string{text}})
		case "literal":
			def.values = append(def.values, runokVarValue{typ: "literal", words: strings.Fields(text)})
		default:
			broken(item.Line, "definitions.vars.%s: type must be literal, path or pattern", name)
			return nil
		}
	}
	return def
}

func (f *runokFragment) readRequirePath(path string, n *yamlNode, note func(int, string, string, ...any), broken func(int, string, ...any)) {
	if n == nil || n.Kind != yamlMap {
		return
	}
	r := &runokRequirePath{action: "deny", src: runokSrc{text: "require_command_in_path", file: path, line: n.Line}}
	if e := n.Map["enabled"]; e != nil {
		r.enabled = e.Str == "true"
	}
	if a := n.Map["action"]; a != nil {
		if a.Str != "ask" && a.Str != "deny" {
			broken(n.KeyLine["action"], "experimental.require_command_in_path.action must be ask or deny")
			return
		}
		r.action = a.Str
	}
	if ig := n.Map["ignore"]; ig != nil {
		r.ignore, _ = yamlStrings(ig)
	}
	f.require = r
}

// resolveRunokPath makes a definitions path absolute: ~ is the home
// directory, a relative path starts at the defining file's directory.
func resolveRunokPath(p, dir, home string) string {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		return filepath.Join(home, strings.TrimPrefix(p, "~"))
	case filepath.IsAbs(p):
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// yamlStrings reads a scalar or a list of scalars.
func yamlStrings(n *yamlNode) ([]string, bool) {
	switch n.Kind {
	case yamlScalar:
		if n.Str == "" {
			return nil, true
		}
		return []string{n.Str}, true
	case yamlList:
		var out []string
		for _, item := range n.List {
			if item.Kind != yamlScalar {
				return nil, false
			}
			out = append(out, item.Str)
		}
		return out, true
	}
	return nil, false
}

// runokConfig is a merged configuration ready to evaluate commands.
type runokConfig struct {
	rules      []*runokRule
	wrappers   []*runokWrapper
	deflt      *runokSrc // nil with noDefault: no opinion on unmatched commands
	noDefault  bool
	paths      map[string][]string
	vars       map[string]*runokVarDef
	flagGroups map[string]*rpFlagGroupDef
	valueFlags map[string]bool
	require    *runokRequirePath
	missing    []string
}

type runokWrapper struct {
	src  runokSrc
	pats []*runokPattern
}

func (c *runokConfig) varType(name string) (string, bool) {
	v, ok := c.vars[name]
	if !ok {
		return "", false
	}
	return v.typ, true
}

func (c *runokConfig) flagGroup(name string) (*rpFlagGroupDef, bool) {
	g, ok := c.flagGroups[name]
	return g, ok
}

func (c *runokConfig) valueFlag(flag string) bool { return c.valueFlags[flag] }

func (c *runokConfig) pathsOf(name string) ([]string, bool) {
	p, ok := c.paths[name]
	return p, ok
}

func (c *runokConfig) varValuesOf(name string) ([]runokVarValue, bool) {
	v, ok := c.vars[name]
	if !ok || v.typ == "pattern" {
		return nil, false
	}
	return v.values, true
}

// compile parses the fragment's patterns. A pattern that cannot be parsed
// is reported; as runok refuses such a configuration, zot keeps the rest
// but asks where the broken rules might have decided.
func (f *runokFragment) compile() (*runokConfig, []PermissionProblem) {
	c := &runokConfig{deflt: f.deflt, paths: f.paths, vars: f.vars, flagGroups: map[string]*rpFlagGroupDef{},
		valueFlags: map[string]bool{}, require: f.require, missing: append([]string(nil), f.missing...)}
	var probs []PermissionProblem
	broken := func(src runokSrc, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		probs = append(probs, PermissionProblem{File: src.file, Line: src.line, Level: problemError, Msg: msg + "; until it is fixed, what these rules would allow is asked"})
		c.missing = append(c.missing, fmt.Sprintf("%s: %s", src.where(), msg))
	}
	for _, name := range sortedKeys(f.flagGroups) {
		src := f.flagGroups[name]
		g, err := parseFlagGroupDef(src.text)
		if err != nil {
			broken(src, "definitions.flag_groups.%s: %v", name, err)
			continue
		}
		c.flagGroups[name] = g
		if g.value != nil && g.value.kind != rpOptValue {
			for _, a := range g.aliases {
				c.valueFlags[a.String()] = true
			}
		}
	}
	for _, name := range sortedKeys(f.vars) {
		v := f.vars[name]
		for _, raw := range v.raw {
			if strings.Contains(raw, "<") {
				for _, ph := range []string{"<cmd>", "<opts>", "<vars>", "<var:", "<path:", "<flag:"} {
					if strings.Contains(raw, ph) {
						broken(v.src, "definitions.vars.%s: a pattern value cannot hold %s…", name, ph)
					}
				}
			}
		}
	}
	expand := func(src runokSrc, wrapper bool) ([]*runokPattern, error) {
		var out []*runokPattern
		texts, err := c.expandText(src.text, f.aliases, wrapper)
		if err != nil {
			return nil, err
		}
		for _, t := range texts {
			ps, err := parseRunokPattern(t, c, wrapper)
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		}
		return out, nil
	}
	for _, r := range f.rules {
		pats, err := expand(r.src, false)
		if err != nil {
			broken(r.src, "%s: %v", r, err)
			continue
		}
		for _, why := range c.neverMatches(r.src.text, pats) {
			probs = append(probs, PermissionProblem{File: r.src.file, Line: r.src.line, Level: problemNever, Msg: fmt.Sprintf("%s: can never match: %s", r, why)})
		}
		rule := *r
		rule.pats = pats
		c.rules = append(c.rules, &rule)
	}
	for _, w := range f.wrappers {
		pats, err := expand(w, true)
		if err == nil && !strings.Contains(w.text, "<cmd>") {
			err = errors.New("a wrapper needs a <cmd> placeholder where the command it runs goes")
		}
		if err != nil {
			broken(w, "wrapper %s: %v", quoteRule(w.text), err)
			continue
		}
		c.wrappers = append(c.wrappers, &runokWrapper{src: w, pats: pats})
	}
	for _, r := range c.rules {
		c.learnValueFlags(r.pats)
	}
	for _, w := range c.wrappers {
		c.learnValueFlags(w.pats)
	}
	return c, probs
}

// neverMatches names what keeps a rule from ever matching: a shell
// operator or a redirection in it (rules see one simple command, without
// its redirections), a path or variable name nothing defines.
func (c *runokConfig) neverMatches(text string, pats []*runokPattern) []string {
	var out []string
	words, _ := lexRunokPattern(text)
	for _, w := range words {
		for _, op := range []string{"&&", "||", "|", ";", "&", ">", ">>", "<", "2>&1", "&>"} {
			if w.is(op) {
				out = append(out, fmt.Sprintf("%q is a shell operator or a redirection: rules are matched against each simple command, without its redirections", op))
			}
		}
	}
	var walk func([]rpTok)
	walk = func(toks []rpTok) {
		for _, t := range toks {
			switch {
			case t.kind == rpPath && c.paths[t.name] == nil:
				out = append(out, fmt.Sprintf("<path:%s> names no definitions.paths entry", t.name))
			case t.kind == rpVar && c.vars[t.name] == nil:
				out = append(out, fmt.Sprintf("<var:%s> names no definitions.vars entry", t.name))
			case t.kind == rpFlagValue && t.value != nil:
				walk([]rpTok{*t.value})
			case t.kind == rpOptional:
				walk(t.group)
			}
		}
	}
	for _, p := range pats {
		if p.cmdVar != "" && c.vars[p.cmdVar] == nil {
			out = append(out, fmt.Sprintf("<var:%s> names no definitions.vars entry", p.cmdVar))
		}
		walk(p.args)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// learnValueFlags records the flags patterns give values: the flag schema
// runok infers from the rules.
func (c *runokConfig) learnValueFlags(pats []*runokPattern) {
	var walk func([]rpTok)
	walk = func(toks []rpTok) {
		for _, t := range toks {
			switch {
			case t.kind == rpFlagValue && t.value.kind != rpOptValue:
				for _, a := range t.alts {
					c.valueFlags[a.String()] = true
				}
			case t.kind == rpOptional:
				walk(t.group)
			}
		}
	}
	for _, p := range pats {
		walk(p.args)
	}
}

// expandText applies aliases (to the command word, recursively, at most
// runokMaxAliases deep, never an alias inside its own chain) and pattern
// variables (inlined where <var:name> stands).
func (c *runokConfig) expandText(text string, aliases map[string][]runokSrc, wrapper bool) ([]string, error) {
	var out []string
	var visit func(t string, chain []string) error
	visit = func(t string, chain []string) error {
		if len(out) > runokMaxExpansions {
			return fmt.Errorf("aliases expand it into more than %d patterns", runokMaxExpansions)
		}
		first, rest := splitFirstPatternWord(t)
		if alias, ok := aliases[first]; ok && !wrapper && !slices.Contains(chain, first) && len(chain) < runokMaxAliases {
			for _, a := range alias {
				next := a.text
				if rest != "" {
					next += " " + rest
				}
				if err := visit(next, append(chain, first)); err != nil {
					return err
				}
			}
			return nil
		}
		out = append(out, t)
		return nil
	}
	if err := visit(text, nil); err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(c.vars) {
		v := c.vars[name]
		ph := "<var:" + name + ">"
		if v.typ != "pattern" {
			continue
		}
		var next []string
		for _, t := range out {
			if !strings.Contains(t, ph) {
				next = append(next, t)
				continue
			}
			for _, val := range v.raw {
				next = append(next, strings.ReplaceAll(t, ph, val))
			}
			if len(next) > runokMaxExpansions {
				return nil, fmt.Errorf("variables expand it into more than %d patterns", runokMaxExpansions)
			}
		}
		out = next
	}
	return out, nil
}

// splitFirstPatternWord splits a pattern after its first word (quotes and
// escapes kept).
func splitFirstPatternWord(s string) (first, rest string) {
	s = strings.TrimLeft(s, " \t")
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == ' ' || c == '\t':
			return s[:i], strings.TrimLeft(s[i:], " \t")
		}
	}
	return s, ""
}

// runokVerdict is a configuration's answer about one command.
type runokVerdict struct {
	action  string // allow, ask, deny; "" no rule matched and no default
	rule    *runokRule
	deflt   *runokSrc // the default that decided
	byZot   string    // a default zot gave: "runok's default (ask)", why it asks
	message string
	fix     string
}

var actionRank = map[string]int{"": 0, "allow": 1, "ask": 2, "deny": 3}

// stricter keeps a unless b is more restrictive.
func stricter(a, b runokVerdict) runokVerdict {
	if actionRank[b.action] > actionRank[a.action] {
		return b
	}
	return a
}

// runokEval evaluates commands against one configuration.
type runokEval struct {
	cfg   *runokConfig
	split func(line, cwd string) ([]ruleCommand, []string)
	// sourcing: the whole line runs source, . or eval, which
	// require_command_in_path does not second-guess.
	sourcing bool
	budget   *ruleBudget
}

// ruleBudget bounds the work of judging one line — matcher steps and
// wrapped commands, shared by all its commands — so that a line built to
// multiply it (env env env … under a wrapper 'env * <cmd>') ends in an
// ask instead of a hang.
type ruleBudget struct{ left int }

// ruleBudgetSteps is a line's budget: far above what real configurations
// and lines take (thousands of steps), far below a noticeable wait.
const ruleBudgetSteps = 2_000_000

func newRuleBudget() *ruleBudget { return &ruleBudget{left: ruleBudgetSteps} }

// take spends n steps; false once the budget is gone.
func (b *ruleBudget) take(n int) bool {
	b.left -= n
	return b.left >= 0
}

var runokBudgetSpent = runokVerdict{action: "ask", byZot: "the line takes too much work to judge against the rules"}

// command evaluates one simple command: every rule that matches, then the
// wrappers that unwrap it, merged strictest first; unmatched, the default.
func (e *runokEval) command(words []string, cwd string, depth int) runokVerdict {
	if depth > runokMaxWrapDepth {
		return runokVerdict{action: "ask", byZot: fmt.Sprintf("wrappers nested more than %d deep", runokMaxWrapDepth)}
	}
	var v runokVerdict
	for _, r := range e.cfg.rules {
		matched, exceeded := false, false
		for _, p := range r.pats {
			m := &rpMatcher{defs: e.cfg, cwd: cwd, broad: r.action != "allow"}
			if m.match(p, words, nil) && !m.exceeded {
				matched = true
			}
			if !e.budget.take(m.steps) {
				return runokBudgetSpent
			}
			exceeded = exceeded || m.exceeded
			if matched {
				break
			}
		}
		switch {
		case exceeded && !matched && r.action != "allow":
			v = stricter(v, runokVerdict{action: "ask", rule: r, byZot: fmt.Sprintf("the pattern took more than %d steps to match, so zot cannot tell whether it matches", rpMaxSteps)})
		case !matched:
		case r.when && r.action == "allow":
			// zot does not evaluate when: an allow that depends on one
			// does not match.
		case r.when:
			v = stricter(v, runokVerdict{action: "ask", rule: r, message: r.message, fix: r.fix, byZot: "the rule has a when clause, which zot does not evaluate: it asks"})
		default:
			v = stricter(v, runokVerdict{action: r.action, rule: r, message: r.message, fix: r.fix})
		}
	}
	unwrapped, spent := false, false
	for _, w := range e.cfg.wrappers {
		for _, p := range w.pats {
			m := &rpMatcher{defs: e.cfg, cwd: cwd, sequential: true, broad: true}
			m.match(p, words, func(caps []string) bool {
				for _, c := range caps {
					unwrapped = true
					if !e.budget.take(1000) {
						spent = true
						return true
					}
					if inner := e.line(c, cwd, depth+1); inner.action != "" {
						v = stricter(v, inner)
					}
				}
				return false
			})
			if spent || !e.budget.take(m.steps) {
				return runokBudgetSpent
			}
		}
	}
	if v.action != "" {
		return v
	}
	if r := e.cfg.require; r != nil && r.enabled && !unwrapped && !e.sourcing && !inPath(words[0], r.ignore) {
		return runokVerdict{action: r.action, byZot: fmt.Sprintf("%s is not a command found in $PATH (experimental.require_command_in_path, %s)", words[0], r.src.where())}
	}
	if e.cfg.deflt != nil {
		return runokVerdict{action: e.cfg.deflt.text, deflt: e.cfg.deflt}
	}
	if e.cfg.noDefault {
		return runokVerdict{}
	}
	return runokVerdict{action: "ask", byZot: "no rule matched; runok's default is ask"}
}

// line evaluates a command line a wrapper captured: split as the shell
// reads it, each command evaluated, the strictest kept.
func (e *runokEval) line(line, cwd string, depth int) runokVerdict {
	cmds, unfollowed := e.split(line, cwd)
	var v runokVerdict
	if len(unfollowed) > 0 {
		v = runokVerdict{action: "ask", byZot: "zot cannot follow all of the wrapped command: " + strings.Join(unfollowed, "; ")}
	}
	for _, c := range cmds {
		dir := c.cwd
		if dir == "" {
			dir = cwd
		}
		v = stricter(v, e.command(c.words, dir, depth))
	}
	return v
}

// shellBuiltins are commands the shell runs itself, never looked up in
// $PATH.
var shellBuiltins = strings.Fields(`. : [ alias bg bind break builtin caller cd command compgen complete compopt
	continue declare dirs disown echo enable eval exec exit export false fc fg getopts hash help history jobs
	kill let local logout mapfile popd printf pushd pwd read readarray readonly return set shift shopt source
	suspend test times trap true type typeset ulimit umask unalias unset wait`)

// inPath says whether a command name is one require_command_in_path lets
// through: a builtin, a path, an expansion, an ignored name or a program
// found in $PATH.
func inPath(name string, ignore []string) bool {
	if strings.ContainsAny(name, "/$`") || slices.Contains(ignore, name) || slices.Contains(shellBuiltins, name) {
		return true
	}
	_, err := exec.LookPath(name)
	return err == nil
}

// runokRules is the runok source of a session: the configuration that
// applies in full, and — for a project's files not yet trusted — their
// deny and ask rules evaluated beside it.
type runokRules struct {
	full      *runokConfig
	untrusted *runokConfig // nil when every project file is trusted
	missing   []string
	whenRules int
}

// loadRunokRules reads the layers and builds the source; nil when there is
// no runok.yml at all.
func loadRunokRules(src PermissionSources) (*runokRules, []PermissionProblem, []PermissionLoosening, []string) {
	layers := findRunokFiles(src)
	if len(layers) == 0 {
		return nil, nil, nil, nil
	}
	ld := &runokLoader{home: src.UserHome}
	var problems []PermissionProblem
	var loosening []PermissionLoosening
	var files []string
	trusted, all := newRunokFragment(), newRunokFragment()
	var untrustedDefault *runokSrc
	var untrustedRules []*runokRule
	anyUntrusted := false
	for i := range layers {
		l := &layers[i]
		l.frag = ld.load(l.path, nil)
		problems = append(problems, l.frag.problems...)
		files = append(files, l.frag.files...)
		all.merge(l.frag)
		if !l.project {
			trusted.merge(l.frag)
			continue
		}
		summary := runokLooseningOf(l.frag, defaultText(trusted.deflt))
		pl := PermissionLoosening{File: l.path, Summary: summary, Digest: ruleFilesDigest(l.frag.files), Loosens: summary != ""}
		if !pl.Loosens {
			pl.Summary = "deny and ask rules only (they apply untrusted)"
		}
		loosening = append(loosening, pl)
		if !pl.Loosens || src.Approved != nil && src.Approved(pl) {
			trusted.merge(l.frag)
			continue
		}
		anyUntrusted = true
		problems = append(problems, PermissionProblem{File: l.path, Level: problemNote, Msg: "its allow rules, defaults and definitions apply once this directory is trusted (zot trust); its deny and ask rules apply now"})
		for _, r := range l.frag.rules {
			if r.action != "allow" {
				untrustedRules = append(untrustedRules, r)
			}
		}
		if d := l.frag.deflt; d != nil {
			untrustedDefault = d
		}
	}
	// all.problems repeats the layers' own problems: compile reports only
	// the patterns' problems.
	full, probs := trusted.compile()
	problems = append(problems, probs...)
	rr := &runokRules{full: full}
	if anyUntrusted {
		if d := untrustedDefault; d != nil && actionRank[d.text] > actionRank[defaultOf(full)] {
			full.deflt = d // a project's stricter default applies untrusted
		}
		u := *all
		u.rules, u.deflt = untrustedRules, nil
		cfg, probs := u.compile()
		for _, p := range probs {
			if !slices.ContainsFunc(problems, func(q PermissionProblem) bool { return q == p }) {
				problems = append(problems, p)
			}
		}
		cfg.noDefault = true
		rr.untrusted = cfg
	}
	rr.missing = append(append([]string(nil), full.missing...), all.missing...)
	if rr.untrusted != nil {
		rr.missing = append(rr.missing, rr.untrusted.missing...)
	}
	slices.Sort(rr.missing)
	rr.missing = slices.Compact(rr.missing)
	for _, r := range all.rules {
		if r.when {
			rr.whenRules++
		}
	}
	if rr.whenRules > 0 {
		problems = append(problems, PermissionProblem{Level: problemNote, Msg: fmt.Sprintf("runok: %d rule(s) have a when clause, which zot does not evaluate: deny and ask rules with one ask, allow rules with one do not match", rr.whenRules)})
	}
	slices.Sort(files)
	return rr, problems, loosening, slices.Compact(files)
}

// defaultOf is the default a configuration gives a command no rule
// matches: runok's ask when it sets none.
func defaultOf(c *runokConfig) string { return defaultText(c.deflt) }

func defaultText(d *runokSrc) string {
	if d != nil {
		return d.text
	}
	return "ask"
}

// runokLooseningOf is what a project file (with what it extends) would
// loosen, "" for nothing: its allow rules, a default less strict than
// base (the default of the layers it merges onto: deny, then ask, then
// allow), and its definitions, which widen other rules.
func runokLooseningOf(f *runokFragment, base string) string {
	var items []string
	for _, r := range f.rules {
		if r.action == "allow" {
			items = append(items, r.String())
		}
	}
	if f.deflt != nil && actionRank[f.deflt.text] < actionRank[base] {
		items = append(items, "defaults.action: "+f.deflt.text)
	}
	for _, w := range f.wrappers {
		items = append(items, "wrapper "+quoteRule(w.text))
	}
	for _, k := range sortedKeys(f.aliases) {
		for _, a := range f.aliases[k] {
			items = append(items, fmt.Sprintf("alias %s: %s", k, quoteRule(a.text)))
		}
	}
	for _, k := range sortedKeys(f.vars) {
		v := f.vars[k]
		var vals []string
		for _, x := range v.values {
			vals = append(vals, strings.Join(x.words, " "))
		}
		items = append(items, fmt.Sprintf("var %s (%s): %s", k, v.typ, strings.Join(append(vals, v.raw...), ", ")))
	}
	for _, k := range sortedKeys(f.paths) {
		items = append(items, fmt.Sprintf("paths %s: %s", k, strings.Join(f.paths[k], ", ")))
	}
	for _, k := range sortedKeys(f.flagGroups) {
		items = append(items, fmt.Sprintf("flag group %s: %s", k, quoteRule(f.flagGroups[k].text)))
	}
	sort.Strings(items)
	return strings.Join(items, "; ")
}

// verdict evaluates one command of a line for the session: the full
// configuration, beside it the untrusted project's deny and ask rules;
// allow becomes ask while a file or an extends is missing.
func (rr *runokRules) verdict(words []string, cwd string, split func(line, cwd string) ([]ruleCommand, []string), sourcing bool, budget *ruleBudget) runokVerdict {
	v := (&runokEval{cfg: rr.full, split: split, sourcing: sourcing, budget: budget}).command(words, cwd, 0)
	if rr.untrusted != nil {
		v = stricter(v, (&runokEval{cfg: rr.untrusted, split: split, sourcing: sourcing, budget: budget}).command(words, cwd, 0))
	}
	if v.action == "allow" && len(rr.missing) > 0 {
		v.action = "ask"
		v.byZot = "part of the runok configuration is missing, so what it would allow is asked: " + strings.Join(rr.missing, "; ")
	}
	return v
}
