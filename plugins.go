package main

// Claude Code plugins: a directory with .claude-plugin/plugin.json that
// bundles hooks, skills, commands and MCP servers. `zot plugin install`
// copies one into $ZOT_HOME/plugins/<name>/; installing it is the user's
// opt-in, so an enabled plugin's parts load without --claude-hooks and
// without project trust. This file finds, installs and lists plugins;
// wire.go hands each part to the plugin of zot that runs it.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Plugin is one installed plugin.
type Plugin struct {
	Name, Version, Description string
	Dir                        string
	Enabled                    bool
	// Err says why the plugin cannot be used; nothing of it loads.
	Err error
	// Unsupported lists what the plugin has that zot cannot run.
	Unsupported []string
}

// The parts zot loads from a plugin directory.
func (p Plugin) HooksFile() string   { return filepath.Join(p.Dir, "hooks", "hooks.json") }
func (p Plugin) SkillsDir() string   { return filepath.Join(p.Dir, "skills") }
func (p Plugin) CommandsDir() string { return filepath.Join(p.Dir, "commands") }
func (p Plugin) MCPFile() string     { return filepath.Join(p.Dir, ".mcp.json") }

// Origin names the plugin where its parts show: "plugin:NAME".
func (p Plugin) Origin() string { return "plugin:" + p.Name }

// Parts lists the parts of the plugin that zot loads.
func (p Plugin) Parts() []string {
	var parts []string
	for _, part := range []struct{ name, path string }{
		{"hooks", p.HooksFile()}, {"skills", p.SkillsDir()}, {"commands", p.CommandsDir()}, {"mcp", p.MCPFile()},
	} {
		if _, err := os.Stat(part.path); err == nil {
			parts = append(parts, part.name)
		}
	}
	return parts
}

// pluginManifest is .claude-plugin/plugin.json as zot reads it.
type pluginManifest struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description"`
}

// pluginMetaKeys are the manifest's keys that describe the plugin; every
// other key declares something to load, which zot reads only from the
// standard layout.
var pluginMetaKeys = map[string]bool{
	"$schema": true, "name": true, "version": true, "description": true, "author": true,
	"homepage": true, "repository": true, "license": true, "keywords": true,
}

// pluginUnsupportedParts are the standard layout's parts zot cannot run.
var pluginUnsupportedParts = []struct{ path, what string }{
	{"agents", "agents/ (subagents)"},
	{"output-styles", "output-styles/"},
	{".lsp.json", ".lsp.json (LSP servers)"},
	{"bin", "bin/ (executables added to PATH)"},
}

// validPluginName is what a plugin's name may be: one safe directory name.
var validPluginName = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

const pluginManifestLimit = 1 << 20

// readPlugin reads the plugin in dir: its manifest, and what it holds that
// zot cannot run. The error names the file and what to fix.
func readPlugin(dir string) (Plugin, error) {
	p := Plugin{Dir: dir}
	path := filepath.Join(dir, ".claude-plugin", "plugin.json")
	b, err := readUntrustedFile(path, pluginManifestLimit)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return p, fmt.Errorf("%s has no .claude-plugin/plugin.json: it is not a Claude Code plugin", dir)
		}
		return p, err
	}
	var keys map[string]json.RawMessage
	var mf pluginManifest
	if err := json.Unmarshal(b, &keys); err != nil {
		return p, fmt.Errorf("%s: not a JSON object: %v", path, err)
	}
	if err := json.Unmarshal(b, &mf); err != nil {
		return p, fmt.Errorf("%s: %v (name, version and description are text)", path, err)
	}
	if !validPluginName().MatchString(mf.Name) || strings.Contains(mf.Name, "..") {
		return p, fmt.Errorf("%s: name %q is not a plugin name (letters, digits, - _ and ., at most 64, not starting with . or -)", path, truncate(mf.Name, 80))
	}
	p.Name, p.Version, p.Description = mf.Name, mf.Version, mf.Description
	for _, k := range sortedKeys(keys) {
		if !pluginMetaKeys[k] {
			p.Unsupported = append(p.Unsupported, fmt.Sprintf("plugin.json %q (zot loads only the standard layout)", k))
		}
	}
	for _, u := range pluginUnsupportedParts {
		if _, err := os.Stat(filepath.Join(dir, u.path)); err == nil {
			p.Unsupported = append(p.Unsupported, u.what)
		}
	}
	return p, nil
}

// checkPluginFiles checks that the parts zot loads are files it can read,
// so that an install does not succeed with a plugin that would not load.
func checkPluginFiles(p Plugin) error {
	for _, path := range []string{p.HooksFile(), p.MCPFile()} {
		b, err := readUntrustedFile(path, pluginManifestLimit)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		var v map[string]json.RawMessage
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("%s: not a JSON object: %v", path, err)
		}
	}
	return nil
}

// pluginsDir is where plugins are installed.
func pluginsDir(home string) string { return filepath.Join(home, "plugins") }

// pluginStatePath holds the names of the disabled plugins. Its name starts
// with a dot, which no plugin's may.
func pluginStatePath(home string) string { return filepath.Join(pluginsDir(home), ".disabled.json") }

// LoadPlugins lists the installed plugins by name. A directory that is not
// a usable plugin is listed with its Err.
func LoadPlugins(home string) []Plugin {
	entries, _ := os.ReadDir(pluginsDir(home))
	disabled := readDisabledPlugins(home)
	var out []Plugin
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !e.IsDir() {
			continue
		}
		dir := filepath.Join(pluginsDir(home), e.Name())
		p, err := readPlugin(dir)
		switch {
		case err != nil:
			p.Name, p.Err = e.Name(), err
		case p.Name != e.Name():
			p.Err = fmt.Errorf("%s holds plugin %q; reinstall it (zot plugin install)", dir, p.Name)
			p.Name = e.Name()
		}
		p.Enabled = p.Err == nil && !disabled[p.Name]
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// EnabledPlugins are the plugins whose parts load.
func EnabledPlugins(home string) []Plugin {
	var out []Plugin
	for _, p := range LoadPlugins(home) {
		if p.Enabled {
			out = append(out, p)
		}
	}
	return out
}

// readDisabledPlugins reads the disabled names. A file that cannot be read
// disables nothing: it only ever holds the user's own choice to turn off.
func readDisabledPlugins(home string) map[string]bool {
	var st struct {
		Disabled []string `json:"disabled"`
	}
	b, err := os.ReadFile(pluginStatePath(home))
	if err == nil {
		json.Unmarshal(b, &st)
	}
	out := map[string]bool{}
	for _, n := range st.Disabled {
		out[n] = true
	}
	return out
}

func writeDisabledPlugins(home string, disabled map[string]bool) error {
	names := sortedKeys(disabled)
	if names == nil {
		names = []string{}
	}
	b, _ := json.MarshalIndent(map[string][]string{"disabled": names}, "", "  ")
	if err := os.MkdirAll(pluginsDir(home), 0o755); err != nil {
		return err
	}
	return writeFileAtomic(pluginStatePath(home), append(b, '\n'), 0o644)
}

var pluginUsage = commandHelp{
	name:  "zot plugin",
	about: "Claude Code plugins",
	subs: []subcommandHelp{
		{"install", "<dir|git-url> [--force]", "copy a plugin (or git clone --depth 1) into $ZOT_HOME/plugins", ""},
		{"list", "[--json]", "installed plugins: name, state, parts, what zot cannot run", ""},
		{"remove", "<name> [-y]", "delete an installed plugin (asks unless -y)", ""},
		{"enable", "<name>", "load its parts again", ""},
		{"disable", "<name>", "keep it installed but load nothing of it", ""},
		{"help", "[command]", "this text, or a command's", ""},
	},
	notes: `An enabled plugin's hooks/hooks.json, skills/, commands/ (as /plugin:command)
and .mcp.json load in every session, without --claude-hooks: installing it
is the opt-in. See docs/plugins.md.
`,
}

// runPluginCommand is `zot plugin …`: exit 0, 1 when it failed, 2 for a
// usage mistake.
func runPluginCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var force, yes, yesLong, asJSON bool
	words, err := subcommandArgs(args, map[string]*bool{"--force": &force, "-y": &yes, "--yes": &yesLong, "--json": &asJSON}, nil)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "zot plugin: %v\n%s", err, pluginUsage.text(""))
		return exitUsage
	case len(words) == 0:
		fmt.Fprint(stderr, pluginUsage.text(""))
		return exitUsage
	}
	want := map[string]int{"install": 1, "list": 0, "remove": 1, "enable": 1, "disable": 1}
	n, known := want[words[0]]
	if !known || len(words)-1 != n {
		fmt.Fprintf(stderr, "zot plugin: unknown command or wrong number of arguments: %s\n%s", sanitize(strings.Join(words, " ")), pluginUsage.text(""))
		return exitUsage
	}
	home := zotHome()
	switch words[0] {
	case "install":
		err = pluginInstall(home, words[1], force, stdout)
	case "list":
		err = pluginList(LoadPlugins(home), asJSON, stdout)
	case "remove":
		err = pluginRemove(home, words[1], yes || yesLong, stdin, stdout, stderr)
	case "enable", "disable":
		err = pluginSetEnabled(home, words[1], words[0] == "enable", stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "zot plugin %s: %s\n", words[0], sanitize(err.Error()))
		return exitFailure
	}
	return exitOK
}

func pluginInstall(home, src string, force bool, stdout io.Writer) error {
	dest, err := installTree("plugin", src, pluginsDir(home), force, func(dir string) (string, error) {
		p, err := readPlugin(dir)
		if err == nil {
			err = checkPluginFiles(p)
		}
		return p.Name, err
	})
	if err != nil {
		return err
	}
	p, err := readPlugin(dest)
	if err != nil {
		return err
	}
	state := "enabled"
	if readDisabledPlugins(home)[p.Name] {
		state = "disabled (zot plugin enable " + p.Name + " turns it on)"
	}
	fmt.Fprintf(stdout, "installed plugin %s %s at %s, %s\n", p.Name, p.Version, dest, state)
	fmt.Fprintf(stdout, "loads: %s\n", pluginPartsText(p))
	for _, u := range p.Unsupported {
		fmt.Fprintf(stdout, "not supported by zot: %s\n", u)
	}
	return nil
}

func pluginPartsText(p Plugin) string {
	if parts := p.Parts(); len(parts) > 0 {
		return strings.Join(parts, ", ")
	}
	return "nothing zot runs"
}

// pluginListRow is one plugin in `zot plugin list --json`.
type pluginListRow struct {
	Name        string   `json:"name"`
	Version     string   `json:"version,omitempty"`
	Enabled     bool     `json:"enabled"`
	Directory   string   `json:"directory"`
	Parts       []string `json:"parts"`
	Unsupported []string `json:"unsupported"`
	Description string   `json:"description,omitempty"`
	Error       string   `json:"error,omitempty"`
}

func pluginList(list []Plugin, asJSON bool, stdout io.Writer) error {
	rows := []pluginListRow{}
	for _, p := range list {
		r := pluginListRow{Name: p.Name, Version: p.Version, Enabled: p.Enabled, Directory: p.Dir,
			Parts: p.Parts(), Unsupported: p.Unsupported, Description: p.Description}
		if r.Parts == nil {
			r.Parts = []string{}
		}
		if r.Unsupported == nil {
			r.Unsupported = []string{}
		}
		if p.Err != nil {
			r.Error = p.Err.Error()
		}
		rows = append(rows, r)
	}
	if asJSON {
		b, _ := json.MarshalIndent(rows, "", "  ")
		_, err := fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	if len(rows) == 0 {
		_, err := fmt.Fprintln(stdout, "no plugins installed (zot plugin install DIR|GIT-URL)")
		return err
	}
	var b strings.Builder
	for _, r := range rows {
		state := map[bool]string{true: "enabled", false: "disabled"}[r.Enabled]
		if r.Error != "" {
			state = "broken"
		}
		fmt.Fprintf(&b, "%s %s  %s  %s\n", sanitize(r.Name), sanitize(r.Version), state, r.Directory)
		if r.Description != "" {
			fmt.Fprintf(&b, "    %s\n", strings.Join(strings.Fields(sanitize(r.Description)), " "))
		}
		if r.Error != "" {
			fmt.Fprintf(&b, "    error: %s\n", sanitize(r.Error))
			continue
		}
		fmt.Fprintf(&b, "    loads: %s\n", strings.Join(r.Parts, ", "))
		for _, u := range r.Unsupported {
			fmt.Fprintf(&b, "    not supported: %s\n", sanitize(u))
		}
	}
	_, err := io.WriteString(stdout, b.String())
	return err
}

// installedPlugin finds an installed plugin by name.
func installedPlugin(home, name string) (Plugin, error) {
	if !validPluginName().MatchString(name) || strings.Contains(name, "..") {
		return Plugin{}, fmt.Errorf("%q is not a plugin name", name)
	}
	for _, p := range LoadPlugins(home) {
		if p.Name == name {
			return p, nil
		}
	}
	return Plugin{}, fmt.Errorf("no plugin %q in %s (see zot plugin list)", name, pluginsDir(home))
}

func pluginRemove(home, name string, yes bool, stdin io.Reader, stdout, stderr io.Writer) error {
	p, err := installedPlugin(home, name)
	if err != nil {
		return err
	}
	if !yes {
		fmt.Fprintf(stderr, "remove plugin %q at %s? [y/N] ", name, p.Dir)
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return fmt.Errorf("plugin %q not removed", name)
		}
	}
	if err := removeTree(p.Dir); err != nil {
		return err
	}
	disabled := readDisabledPlugins(home)
	if disabled[name] {
		delete(disabled, name)
		if err := writeDisabledPlugins(home, disabled); err != nil {
			return fmt.Errorf("removed %s, but could not update %s: %w", p.Dir, pluginStatePath(home), err)
		}
	}
	fmt.Fprintf(stdout, "removed plugin %s from %s\n", name, p.Dir)
	return nil
}

func pluginSetEnabled(home, name string, on bool, stdout io.Writer) error {
	p, err := installedPlugin(home, name)
	if err != nil {
		return err
	}
	if p.Err != nil && on {
		return p.Err
	}
	disabled := readDisabledPlugins(home)
	state := map[bool]string{true: "enabled", false: "disabled"}[on]
	if disabled[name] == !on {
		fmt.Fprintf(stdout, "plugin %s is already %s\n", name, state)
		return nil
	}
	if on {
		delete(disabled, name)
	} else {
		disabled[name] = true
	}
	if err := writeDisabledPlugins(home, disabled); err != nil {
		return fmt.Errorf("write %s: %w", pluginStatePath(home), err)
	}
	fmt.Fprintf(stdout, "plugin %s %s\n", name, state)
	return nil
}
