package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Workspace trust as the modes wire it: what a project would run, its
// trust entries, and the gate a trusted project's validators and rules
// make; and what a project's programs run beyond their command line, and
// what the sandbox keeps from the model's commands for them. A program zot starts
// outside the sandbox (a validator, a hook, an MCP server, an extension)
// runs files of the project it names — `./guard.sh`, `python3
// .claude/hooks/check.py`; git, which the user runs outside it, runs
// .git/hooks. The trust digest covers the content of every project file a
// program names, so that a change after trust un-trusts it; the sandbox
// makes them, and the project's configuration, read-only to commands; and
// each program is checked against what was trusted again before each
// start, so that a change made during the session does not run.

// namedProjectFiles are the regular files inside project (absolute) that
// words name — a program, an argument, the value of --opt=VALUE —
// relative words looked for beneath each of bases. The result is sorted,
// symlinks resolved.
func namedProjectFiles(project string, bases []string, words []string) []string {
	real, err := filepath.EvalSymlinks(project)
	if err != nil {
		return nil
	}
	var out []string
	for _, w := range words {
		if strings.HasPrefix(w, "-") {
			_, v, ok := strings.Cut(w, "=")
			if !ok {
				continue
			}
			w = v
		}
		if w == "" {
			continue
		}
		candidates := []string{w}
		if !filepath.IsAbs(w) {
			candidates = nil
			for _, b := range bases {
				candidates = append(candidates, filepath.Join(b, w))
			}
		}
		for _, c := range candidates {
			p, err := filepath.EvalSymlinks(c)
			if err != nil || !withinDir(p, real) || slices.Contains(out, p) {
				continue
			}
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

// withNamedFiles records the project files an entry's program names in
// e: in Files (what the sandbox protects) and, as their digests, in
// Content (what trust covers).
func withNamedFiles(e trustEntry, project string, files []string) trustEntry {
	e.Files = files
	if len(files) == 0 {
		return e
	}
	real, err := filepath.EvalSymlinks(project)
	if err != nil {
		real = project
	}
	var parts []string
	for _, f := range files {
		parts = append(parts, relTo(real, f)+" "+fileDigest(f))
	}
	if e.Content != "" {
		e.Content += ", "
	}
	e.Content += "files " + strings.Join(parts, ", ")
	return e
}

// hookWords are the words of a hook's shell command line, as far as they
// can name files: $CLAUDE_PROJECT_DIR put in, operators taken as spaces.
func hookWords(command, project string) []string {
	command = strings.NewReplacer("${CLAUDE_PROJECT_DIR}", project, "$CLAUDE_PROJECT_DIR", project).Replace(command)
	command = strings.NewReplacer(";", " ", "|", " ", "&", " ", "<", " ", ">", " ", "(", " ", ")", " ", "`", " ").Replace(command)
	words, err := splitExecutor(command)
	if err != nil {
		words = strings.Fields(command)
	}
	return words
}

// fileDigest is the SHA-256 of a file's content, or why it cannot be read
// (which changes when the file appears). Only a regular file is read: a
// FIFO put in its place does not hold zot.
func fileDigest(path string) string {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return "unreadable"
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "not a regular file"
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unreadable"
	}
	return hex.EncodeToString(h.Sum(nil))
}

// projectGuarded are the paths of a session in cwd that programs outside
// the sandbox read or run: the sandbox guards them from commands
// (sandbox_guard.go), write and edit refuse them in every sandbox mode,
// and no "accept edits" covers them. They are the project's .zot/,
// .claude/ (and the settings files in them, whether they exist or not),
// .mcp.json; what git reads to decide what it runs (sandbox_git.go); every
// rule file zot would read for cwd, those that do not exist yet too
// (ruleFiles: the ones it reads now, with what they extend); and every
// project file a program names (entries).
func projectGuarded(cwd string, entries []trustEntry, ruleFiles []string) []guardedPath {
	real, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		real = filepath.Clean(cwd)
	}
	home, _ := os.UserHomeDir()
	at := func(rel string) string { return filepath.Join(real, rel) }
	out := []guardedPath{
		{Path: at(".zot"), Kind: guardDir, Bind: bindReadOnly},
		{Path: at(".claude"), Kind: guardDir, Bind: bindReadOnly},
		{Path: at(".mcp.json"), Kind: guardFile, Bind: bindReadOnly},
	}
	// Inside the two directories above, which the namespaces path binds
	// read-only whole: guarded on their own where that bind cannot be made
	// (a directory made during the session) and on the Landlock path.
	for _, f := range []string{".zot/validators.json", ".zot/mcp.json", ".zot/settings.json", ".claude/settings.json", ".claude/settings.local.json"} {
		out = append(out, guardedPath{Path: at(f), Kind: guardFile})
	}
	out = append(out, gitGuarded(projectRoot(real), real, home)...)
	for _, f := range append(runokFilesFor(real, home), ruleFiles...) {
		out = append(out, guardedPath{Path: f, Kind: guardFile, Bind: bindReadOnly})
	}
	for _, e := range entries {
		for _, f := range e.Files {
			out = append(out, guardedPath{Path: f, Kind: guardFile, Bind: bindReadOnly})
		}
	}
	return out
}

// guardedBy says, for a path (absolute, symlinks resolved), which of the
// guarded paths covers it; "" for none.
func guardedBy(paths []guardedPath) func(real string) string {
	return func(real string) string { return guardCovers(paths, real) }
}

// stillTrusted is the check before a project program starts again: the
// entry as it is now must be one the user trusted — its command line and
// the content of the files it names. what names it in the refusal.
func (s *setup) stillTrusted(e trustEntry, what string) error {
	if s.approved(e) {
		return nil
	}
	return fmt.Errorf("%s changed since this directory was trusted (its command line, or a file it runs: %s): not run; zot trust %s", what, strings.Join(relAll(s.cwd, e.Files), ", "), quoteDir(s.cwd))
}

func relAll(dir string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = relTo(dir, p)
	}
	if len(out) == 0 {
		return []string{"none named"}
	}
	return out
}

// projectPrograms lists what the project in dir would run with these
// options, and the kinds of program it looked at: MCP servers unless
// --no-mcp, extensions unless --no-ext, validators, the !`command` lines
// of prompt templates unless they are off, and hooks when they are on.
// Files of the user's own (userOwns) are not the project's, even when the
// project directory holds them. problems name the project's files that
// could not be read (a FIFO, a device, one too large): they define
// nothing.
func projectPrograms(home, dir string, o zotOptions, hooksOn bool) (entries []trustEntry, kinds, problems []string) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if !o.noMCP {
		kinds = append(kinds, trustMCP)
		// Given as --mcp-config files are, a missing one would be reported:
		// a project need not have both.
		files := slices.DeleteFunc(mcpProjectFiles(dir), func(f string) bool {
			_, err := os.Lstat(f)
			return errors.Is(err, fs.ErrNotExist)
		})
		slices.Reverse(files) // as --mcp-config files, the last given wins
		servers, bad := loadMCPConfigs(MCPSources{Files: files, SkipDefault: true})
		for _, p := range bad {
			problems = append(problems, "mcp: "+p.msg)
		}
		for _, c := range servers {
			if !c.Disabled && !userOwns(home, c.Source) {
				entries = append(entries, mcpTrustEntry(c, dir))
			}
		}
	}
	if !o.noExt {
		kinds = append(kinds, trustExtension)
		for _, f := range discoverExtensions(home, dir, nil, false, func(f *extFound) bool { return f.Scope == "project" }) {
			if f.Err != nil && !userOwns(home, f.Dir) {
				problems = append(problems, "extension: "+f.Err.Error())
			}
			if f.Manifest != nil && f.Manifest.Enabled && !userOwns(home, f.Dir) {
				entries = append(entries, extTrustEntry(f.Manifest, dir))
			}
		}
	}
	kinds = append(kinds, trustValidator)
	if path := filepath.Join(dir, ".zot", "validators.json"); !userOwns(home, path) {
		data, err := readValidatorFile(path)
		switch {
		case err == nil:
			for _, v := range parseValidators(path, data, func(string) {}) {
				entries = append(entries, validatorTrustEntry(v, dir))
			}
		case !errors.Is(err, fs.ErrNotExist):
			problems = append(problems, err.Error())
		}
	}
	if on, _ := promptsEnabled(o.noPrompts, home); on {
		kinds = append(kinds, trustPrompt)
		for _, t := range LoadPrompts(home, dir, nil, nil) {
			if !t.Owned && len(PromptCommands(t)) > 0 {
				entries = append(entries, promptTrustEntry(t, dir))
			}
		}
	}
	kinds = append(kinds, trustRules)
	src := DefaultPermissionSources(dir)
	src.UserOwns = func(p string) bool { return userOwns(home, p) }
	for _, l := range LoadPermissionRules(src).Loosening {
		entries = append(entries, rulesTrustEntry(l, dir))
	}
	if hooksOn {
		kinds = append(kinds, trustHook)
		userHome, _ := os.UserHomeDir()
		for _, path := range hookSettingsFiles(dir, userHome) {
			if !userOwns(home, path) {
				entries = append(entries, hookTrustEntries(path, dir, func(msg string) { problems = append(problems, msg) })...)
			}
		}
	}
	return entries, kinds, problems
}

// relTo is path relative to the project directory dir.
func relTo(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil {
		return r
	}
	return path
}

// mcpTrustEntry is a project MCP server as trust covers it.
func mcpTrustEntry(c mcpServerConfig, dir string) trustEntry {
	e := trustEntry{Kind: trustMCP, Source: relTo(dir, c.Source), Name: c.Name}
	if c.Type == "stdio" {
		e.Command, e.Names = commandLine(append([]string{c.RawCommand}, c.RawArgs...)), sortedKeys(c.Env)
		e = withNamedFiles(e, dir, namedProjectFiles(dir, []string{dir}, append([]string{c.Command}, c.Args...)))
	} else {
		// The URL's query may carry a key: shown without it, covered
		// whole by the digest, and so is the "oauth" object (where the
		// login goes, which client secret goes there).
		covered := c.RawURL
		if len(c.RawOAuth) > 0 {
			covered += "\x00" + string(c.RawOAuth)
		}
		e.Command, e.Names, e.Content = redactURL(c.RawURL), sortedKeys(c.Headers), sha256Hex([]byte(covered))
	}
	return e
}

// validatorTrustEntry is a project validator as trust covers it.
func validatorTrustEntry(v Validator, dir string) trustEntry {
	e := trustEntry{Kind: trustValidator, Source: relTo(dir, v.Source), Name: v.Name, Command: commandLine(v.Argv), Names: v.Env}
	return withNamedFiles(e, dir, namedProjectFiles(dir, []string{filepath.Dir(v.Source), dir}, v.Argv))
}

// rulesTrustEntry is a project's rules file as trust covers it: what it
// would loosen, shown, and the digest of its whole content.
func rulesTrustEntry(l PermissionLoosening, dir string) trustEntry {
	return trustEntry{Kind: trustRules, Source: relTo(dir, l.File), Name: relTo(dir, l.File), Command: truncate(l.Summary, 400), Content: l.Digest, Tightens: !l.Loosens}
}

// hookTrustEntries are the commands of one hook settings file, each named
// by its event, matcher and place. problem, unless nil, is told when the
// file cannot be read.
func hookTrustEntries(path, dir string, problem func(msg string)) []trustEntry {
	var out []trustEntry
	events, disableAll := readHookSettings(path, func(level, msg string) {
		if problem != nil && level != "info" {
			problem(msg)
		}
	})
	if disableAll {
		// Not a program, but it switches off every hook — the user's own
		// guards in ~/.claude/settings.json too: only a trusted project may.
		out = append(out, trustEntry{Kind: trustHook, Source: relTo(dir, path), Name: "disableAllHooks", Command: "turns off every hook, yours included"})
	}
	for _, ev := range sortedKeys(events) {
		n := 0
		for _, g := range events[ev] {
			for _, h := range g.handlers {
				n++
				name := fmt.Sprintf("%s #%d", ev, n)
				if g.matcher != "" {
					name = fmt.Sprintf("%s %s #%d", ev, g.matcher, n)
				}
				if h.URL != "" {
					// What is sent where: a changed header or variable is
					// trusted anew.
					cmd := "POST " + h.URL
					if len(h.Headers) > 0 || len(h.AllowedEnv) > 0 {
						b, _ := json.Marshal(map[string]any{"headers": h.Headers, "allowedEnvVars": h.AllowedEnv})
						cmd += " " + string(b)
					}
					out = append(out, trustEntry{Kind: trustHook, Source: relTo(dir, path), Name: name, Command: cmd})
					continue
				}
				e := trustEntry{Kind: trustHook, Source: relTo(dir, path), Name: name, Command: h.Command}
				out = append(out, withNamedFiles(e, dir, namedProjectFiles(dir, []string{dir}, hookWords(h.Command, dir))))
			}
		}
	}
	return out
}

// approved says whether e is one of the programs this run may start: the
// files are read again when each plugin starts, and what changed since
// the check (or while the TUI's dialog was open) is not what the user
// trusted.
func (s *setup) approved(e trustEntry) bool {
	if !s.projectOK {
		return false
	}
	for _, t := range s.trust.Entries {
		if t.key() == e.key() && t.sum() == e.sum() {
			return true
		}
	}
	return false
}

// extTrustEntry is a project extension as trust covers it: its manifest
// and, when the manifest names a file of its own directory, that file's
// content.
func extTrustEntry(mf *extManifest, dir string) trustEntry {
	e := trustEntry{Kind: trustExtension, Name: mf.Name, Command: commandLine(append([]string{mf.Exec}, mf.Args...))}
	e.Source, _ = filepath.Rel(dir, mf.Path)
	manifest, err := readUntrustedFile(mf.Path, extManifestLimit)
	if err != nil {
		manifest = []byte(err.Error())
	}
	e.Content = "manifest " + sha256Hex(manifest)
	if !filepath.IsAbs(mf.Exec) && strings.ContainsRune(mf.Exec, '/') {
		e.Content += ", exec " + fileDigest(filepath.Join(mf.Dir, mf.Exec))
	}
	return withNamedFiles(e, dir, namedProjectFiles(dir, []string{mf.Dir}, mf.Args))
}

// mayLoad is the extension host's discovery filter: a project extension
// that would start loads only when the directory is trusted and it is
// exactly one the user trusted — an extension added or changed during the
// session (a /reload-ext after the model wrote one) is not.
func (s *setup) mayLoad(f *extFound, log func(format string, args ...any)) bool {
	if f.Scope != "project" || f.Manifest == nil || !f.Manifest.Enabled {
		return true // not the project's, or nothing to start
	}
	if !s.projectOK {
		return false
	}
	e := extTrustEntry(f.Manifest, s.cwd)
	if s.approved(e) {
		return true
	}
	if log != nil {
		log("extension %q (%s) is new or changed since this directory was trusted: not loaded (zot trust %s, then /reload-ext)", f.Manifest.Name, e.Source, s.cwd)
	}
	return false
}

// trustedValidatorFiles are the validator files a session uses: the
// project's only in a trusted directory.
func trustedValidatorFiles(home, cwd string, projectOK bool) []string {
	var out []string
	for _, f := range validatorFiles(home, cwd) {
		if projectOK || userOwns(home, f) {
			out = append(out, f)
		}
	}
	return out
}

// userOwns says whether path — a file that defines programs (an MCP
// configuration, validators.json, a hook settings file) or an extension's
// directory — is one of the user's own: $ZOT_HOME's validators.json,
// mcp.json and settings.json, a directory of $ZOT_HOME/extensions, and
// ~/.claude/settings.json and settings.local.json. It goes by the file,
// not by the tree it lies in: a repository cloned anywhere under
// ~/.claude or $ZOT_HOME (~/.claude/skills/<repo>, a plugin marketplace)
// and opened as a project is a project like any other. (The user's
// templates and skills, ~/.claude/commands and ~/.claude/skills, are
// their loaders' business: promptRoots marks them the user's.)
func userOwns(home, path string) bool {
	path = filepath.Clean(path)
	if h, err := filepath.Abs(home); err == nil {
		for _, f := range []string{"validators.json", "mcp.json", "settings.json"} {
			if path == filepath.Join(h, f) {
				return true
			}
		}
		if filepath.Dir(path) == filepath.Join(h, "extensions") {
			return true
		}
	}
	if u, err := os.UserHomeDir(); err == nil && u != "" {
		for _, f := range []string{"settings.json", "settings.local.json"} {
			if path == filepath.Join(u, ".claude", f) {
				return true
			}
		}
	}
	return false
}

// commandLine shows argv as one line a shell would read the same way.
func commandLine(argv []string) string {
	var words []string
	for _, a := range argv {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// projectTrusted says whether a session in cwd would start the project's
// own programs (without --trust-project): the management commands ask.
func projectTrusted(home, cwd string) bool {
	hooksOn, _ := hooksEnabled(false, home)
	entries, kinds, _ := projectPrograms(home, cwd, zotOptions{}, hooksOn)
	return checkTrust(home, cwd, entries, kinds).Trusted
}

// loadTrustedGate is what zot validate asks: the validators and the
// permission rules a session in cwd would have. The project's validators
// and the loosening part of its rules count only in a trusted directory,
// and warn says when its validators do not.
func loadTrustedGate(home, cwd string, warn func(string)) ([]Validator, *PermissionRules) {
	ok := projectTrusted(home, cwd)
	if path := filepath.Join(cwd, ".zot", "validators.json"); !ok && !userOwns(home, path) {
		if _, err := os.Stat(path); err == nil {
			warn(fmt.Sprintf("%s: not used: untrusted (zot trust): this directory's own validators apply once you trust it", path))
		}
	}
	src := DefaultPermissionSources(cwd)
	src.UserOwns = func(p string) bool { return userOwns(home, p) }
	src.Approved = func(PermissionLoosening) bool { return ok }
	return loadValidatorFiles(trustedValidatorFiles(home, cwd, ok), warn), LoadPermissionRules(src)
}

// trustNotes are the lines a run without a terminal prints when it leaves
// the project's programs out: a trust.json it cannot read, and what it
// skipped with the command that trusts it.
func (s *setup) trustNotes() []string {
	var out []string
	if s.trust.Warning != "" {
		out = append(out, "warning: "+sanitize(s.trust.Warning))
	}
	if !s.projectOK {
		out = append(out, trustSkippedLine(s.trust))
	}
	return out
}

// trustAsk is the TUI's question about the project's programs; answer
// runs in the UI loop.
func (s *setup) trustAsk(answer func(trust bool)) tuiTrustAsk {
	a := tuiTrustAsk{Dir: s.trust.Dir, Warning: s.trust.Warning, Answer: answer}
	changed := map[string]string{}
	for _, c := range s.trust.Changes {
		changed[c.Entry.key()] = c.Change
	}
	for _, e := range s.trust.Entries {
		a.Programs = append(a.Programs, tuiTrustProgram{Change: changed[e.key()], Text: e.String()})
	}
	for _, c := range s.trust.Changes {
		if c.Change == "removed" {
			a.Programs = append(a.Programs, tuiTrustProgram{Change: c.Change, Text: c.Entry.String()})
		}
	}
	return a
}
