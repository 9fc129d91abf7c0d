package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// `zot ext …`: list, install, remove, enable, disable and read the logs of
// extensions. Errors about an extension exit 1; usage errors exit 2.

var extUsage = commandHelp{
	name:  "zot ext",
	about: "manage extensions",
	subs: []subcommandHelp{
		{"list", "[--project] [--json]", "installed extensions: scope, name, version, state, directory, permissions, shadowed and refused names", ""},
		{"install", "<path|git-url> [--project] [--force]", "copy a directory (or git clone --depth 1) into the extensions directory", "--force replaces an installed extension of the same name.\n"},
		{"remove", "<name> [--project] [-y]", "delete an installed extension (asks unless -y)", ""},
		{"enable", "<name> [--project]", `set "enabled": true in its manifest`, ""},
		{"disable", "<name> [--project]", `set "enabled": false in its manifest`, ""},
		{"logs", "<name> [-f]", "print its log (-f: follow)", "The log is $ZOT_HOME/logs/ext-<name>.log.\n"},
		{"check", "<dir> [--json]", "run an extension once and check it speaks the protocol", "Exit status: 0 conformant, 1 not, 2 usage error.\n"},
		{"help", "[command]", "this text, or a command's", ""},
	},
	notes: `--project works on ./.zot/extensions instead of $ZOT_HOME/extensions.
To load an extension for one run without installing it: zot --ext DIR.
The protocol: docs/extensions.md.
`,
}

// extCLI is one run of `zot ext`.
type extCLI struct {
	home, cwd      string
	stdin          io.Reader
	stdout, stderr io.Writer
	project        bool
	// projectTrusted says whether the user trusted the project directory
	// to run its own extensions (wire.go knows).
	projectTrusted func(cwd string) bool
}

// runExtCommand is `zot ext …`. reserved are the slash commands of zot's
// own UI, which zot ext check warns an extension not to take;
// projectTrusted says whether a session in cwd would load the project's
// own extensions.
func runExtCommand(args, reserved []string, projectTrusted func(cwd string) bool, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, extUsage.text(""))
		return exitUsage
	}
	sub, rest := args[0], args[1:]
	switches := map[string][]string{
		"list":    {"--project", "--json"},
		"install": {"--project", "--force"},
		"remove":  {"--project", "-y", "--yes"},
		"enable":  {"--project"},
		"disable": {"--project"},
		"logs":    {"-f", "--follow"},
		"check":   {"--json"},
	}
	allowed, ok := switches[sub]
	if !ok {
		fmt.Fprintf(stderr, "zot ext: unknown command %q (see zot ext help)\n", sub)
		return exitUsage
	}
	set := map[string]bool{}
	var words []string
	for i, a := range rest {
		if a == "--" {
			words = append(words, rest[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			known := false
			for _, s := range allowed {
				known = known || s == a
			}
			if !known {
				fmt.Fprintf(stderr, "zot ext %s: unknown flag %s (see zot ext help)\n", sub, a)
				return exitUsage
			}
			set[a] = true
			continue
		}
		words = append(words, a)
	}
	want := map[string]int{"list": 0, "install": 1, "remove": 1, "enable": 1, "disable": 1, "logs": 1, "check": 1}[sub]
	if len(words) != want {
		fmt.Fprintf(stderr, "zot ext %s: wrong number of arguments\n\n%s", sub, extUsage.text(sub))
		return exitUsage
	}
	if sub == "check" {
		return runExtCheck(words[0], set["--json"], reserved, stdout, stderr)
	}
	cwd, _ := os.Getwd()
	c := &extCLI{home: zotHome(), cwd: cwd, stdin: stdin, stdout: stdout, stderr: stderr, project: set["--project"], projectTrusted: projectTrusted}
	var err error
	switch sub {
	case "list":
		err = c.list(set["--json"])
	case "install":
		err = c.install(words[0], set["--force"])
	case "remove":
		err = c.remove(words[0], set["-y"] || set["--yes"])
	case "enable", "disable":
		err = c.setEnabled(words[0], sub == "enable")
	case "logs":
		err = c.logs(words[0], set["-f"] || set["--follow"])
	}
	if err != nil {
		fmt.Fprintf(stderr, "zot ext %s: %s\n", sub, sanitize(err.Error()))
		var ue usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitFailure
	}
	return exitOK
}

// root is the extensions directory the command works on.
func (c *extCLI) root() string {
	if c.project {
		return filepath.Join(c.cwd, ".zot", "extensions")
	}
	return filepath.Join(c.home, "extensions")
}

func (c *extCLI) scope() string {
	if c.project {
		return "project"
	}
	return "global"
}

// extListRow is one line of `zot ext list`, and its --json object.
type extListRow struct {
	Scope       string        `json:"scope"`
	Name        string        `json:"name,omitempty"`
	Version     string        `json:"version,omitempty"`
	Enabled     bool          `json:"enabled"`
	FailClosed  bool          `json:"fail_closed"`
	Permissions *extListGrant `json:"permissions,omitempty"`
	Language    string        `json:"language,omitempty"`
	Description string        `json:"description,omitempty"`
	Directory   string        `json:"directory"`
	ShadowedBy  string        `json:"shadowed_by,omitempty"`
	// Untrusted: a project extension that a session here does not load,
	// because the user has not trusted the directory (zot trust).
	Untrusted bool     `json:"untrusted,omitempty"`
	Shadowed  []string `json:"shadowed"`
	Refused   []string `json:"refused"`
	Error     string   `json:"error,omitempty"`

	grant string // the text form
}

// extListGrant is an extension's effective grant in `zot ext list --json`:
// spelt out in full when the manifest declares none (Declared false).
type extListGrant struct {
	Declared bool `json:"declared"`
	extPermissions
}

func (c *extCLI) list(asJSON bool) error {
	rows := []extListRow{}
	untrusted := c.projectTrusted != nil && !c.projectTrusted(c.cwd)
	for _, f := range discoverExtensions(c.home, c.cwd, nil, false, nil) {
		if c.project && f.Scope != "project" {
			continue
		}
		r := extListRow{Scope: f.Scope, Directory: f.Dir, Shadowed: []string{}, Refused: []string{}, Untrusted: untrusted && f.Scope == "project"}
		if untrusted && f.ShadowedBy != nil && f.ShadowedBy.Scope == "project" {
			f.ShadowedBy = nil // the project's is not loaded, so this one is
		}
		if f.Err != nil {
			r.Error = f.Err.Error()
			rows = append(rows, r)
			continue
		}
		mf := f.Manifest
		r.Name, r.Version, r.Enabled, r.FailClosed = mf.Name, mf.Version, mf.Enabled, mf.FailClosed
		r.Language, r.Description = mf.Language, mf.Description
		r.Permissions = &extListGrant{Declared: mf.Permissions != nil, extPermissions: mf.Permissions.effective()}
		r.grant = mf.Permissions.String()
		if f.ShadowedBy != nil {
			r.ShadowedBy = f.ShadowedBy.Scope + " " + f.ShadowedBy.Dir
		} else if b, err := os.ReadFile(extStatePath(c.home, mf.Name)); err == nil {
			var st extState
			if json.Unmarshal(b, &st) == nil {
				if st.Shadowed != nil {
					r.Shadowed = st.Shadowed
				}
				if st.Refused != nil {
					r.Refused = st.Refused
				}
			}
		}
		rows = append(rows, r)
	}
	if asJSON {
		b, _ := json.MarshalIndent(rows, "", "  ")
		_, err := fmt.Fprintf(c.stdout, "%s\n", b)
		return err
	}
	if len(rows) == 0 {
		where := filepath.Join(c.cwd, ".zot", "extensions")
		if !c.project {
			where += " or " + filepath.Join(c.home, "extensions")
		}
		fmt.Fprintf(c.stdout, "no extensions in %s\n", where)
		return nil
	}
	// The table is laid out alone, so that the detail lines under each
	// row do not break its columns.
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tNAME\tVERSION\tENABLED\tLANGUAGE\tDIRECTORY")
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return sanitize(s)
	}
	for _, r := range rows {
		enabled := "yes"
		if !r.Enabled {
			enabled = "no"
		}
		if r.Error != "" {
			enabled = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Scope, dash(r.Name), dash(r.Version), enabled, dash(r.Language), dash(r.Directory))
	}
	tw.Flush()
	lines := strings.SplitAfter(table.String(), "\n")
	var out strings.Builder
	out.WriteString(lines[0])
	for i, r := range rows {
		out.WriteString(lines[i+1])
		if r.Error != "" {
			fmt.Fprintf(&out, "  error: %s\n", sanitize(r.Error))
			continue
		}
		fmt.Fprintf(&out, "  permissions: %s; fail_closed=%s\n", r.grant, yesNo(r.FailClosed))
		if r.Untrusted {
			out.WriteString("  not used: untrusted (zot trust): this directory's own extensions load once you trust it\n")
		}
		if r.ShadowedBy != "" {
			fmt.Fprintf(&out, "  not loaded: shadowed by the %s extension of the same name\n", sanitize(r.ShadowedBy))
		}
		for _, s := range r.Shadowed {
			fmt.Fprintf(&out, "  shadowed at the last run: %s\n", sanitize(s))
		}
		if len(r.Refused) > 0 {
			fmt.Fprintf(&out, "  refused at the last run (outside its permissions): %s\n", sanitize(strings.Join(r.Refused, ", ")))
		}
	}
	_, err := io.WriteString(c.stdout, out.String())
	return err
}

func (c *extCLI) install(src string, force bool) error {
	dest, err := installTree("extension", src, c.root(), force, func(dir string) (string, error) {
		mf, err := readManifest(dir, c.scope())
		if err != nil {
			return "", err
		}
		return mf.Name, nil
	})
	if err != nil {
		return err
	}
	mf, err := readManifest(dest, c.scope())
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "installed %s %s at %s\n", mf.Name, mf.Version, dest)
	if !filepath.IsAbs(mf.Exec) && strings.ContainsRune(mf.Exec, '/') {
		if _, err := os.Stat(filepath.Join(dest, mf.Exec)); err != nil {
			fmt.Fprintf(c.stdout, "note: its exec %s does not exist yet; build it (see its README)\n", mf.Exec)
		}
	}
	return nil
}

// installed finds an installed extension by manifest name (or, for a
// directory whose manifest cannot be read, by directory name).
func (c *extCLI) installed(name string) (*extFound, error) {
	if !validExtName(name) {
		return nil, usageError{fmt.Sprintf("%q is not an extension name", name)}
	}
	root := c.root()
	for _, f := range discoverExtensions(c.home, c.cwd, nil, false, nil) {
		if filepath.Dir(f.Dir) != root && f.Dir != root {
			continue
		}
		if (f.Manifest != nil && f.Manifest.Name == name) || (f.Manifest == nil && filepath.Base(f.Dir) == name) {
			return f, nil
		}
	}
	return nil, fmt.Errorf("no extension %q in %s (see zot ext list)", name, root)
}

func (c *extCLI) remove(name string, yes bool) error {
	f, err := c.installed(name)
	if err != nil {
		return err
	}
	if !yes {
		fmt.Fprintf(c.stderr, "remove extension %q at %s? [y/N] ", name, f.Dir)
		answer, _ := bufio.NewReader(c.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return fmt.Errorf("extension %q not removed", name)
		}
	}
	if err := removeTree(f.Dir); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "removed %s from %s (its logs in %s and data in %s are kept)\n", name, f.Dir, filepath.Join(c.home, "logs"), filepath.Join(c.home, "ext-data", name))
	return nil
}

func (c *extCLI) setEnabled(name string, on bool) error {
	f, err := c.installed(name)
	if err != nil {
		return err
	}
	if f.Err != nil {
		return f.Err
	}
	path := f.Manifest.Path
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	updated, changed, err := setManifestEnabled(b, on)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	state := map[bool]string{true: "enabled", false: "disabled"}[on]
	if !changed {
		fmt.Fprintf(c.stdout, "extension %s is already %s\n", name, state)
		return nil
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	if err := writeFileAtomic(path, updated, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Fprintf(c.stdout, "extension %s %s (%s)\n", name, state, path)
	return nil
}

// setManifestEnabled sets the top-level "enabled" field of a manifest,
// changing no other byte. A missing field means enabled; disabling inserts
// it after the opening brace.
func setManifestEnabled(b []byte, on bool) ([]byte, bool, error) {
	val := "false"
	if on {
		val = "true"
	}
	spans, open, err := topLevelValues(b, "enabled")
	if err != nil {
		return nil, false, err
	}
	if len(spans) == 0 {
		if on {
			return b, false, nil
		}
		j := open + 1
		for j < len(b) && strings.ContainsRune(" \t\r\n", rune(b[j])) {
			j++
		}
		ws := string(b[open+1 : j])
		insert := ws + `"enabled": false`
		if j < len(b) && b[j] != '}' {
			insert += ","
		}
		out := append(append(append([]byte{}, b[:open+1]...), insert...), b[open+1:]...)
		return out, true, nil
	}
	out := append([]byte{}, b...)
	changed := false
	for i := len(spans) - 1; i >= 0; i-- {
		s := spans[i]
		if string(out[s[0]:s[1]]) != val {
			out = append(append(append([]byte{}, out[:s[0]]...), val...), out[s[1]:]...)
			changed = true
		}
	}
	return out, changed, nil
}

// topLevelValues finds the byte spans of the values of key in a JSON object,
// and where the object opens.
func topLevelValues(b []byte, key string) (spans [][2]int, open int, err error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if d, ok := tok.(json.Delim); err != nil || !ok || d != '{' {
		return nil, 0, errors.New("not a JSON object")
	}
	open = int(dec.InputOffset()) - 1
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, 0, err
		}
		start := int(dec.InputOffset())
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, 0, err
		}
		if k == key {
			for start < len(b) && strings.ContainsRune(" \t\r\n:", rune(b[start])) {
				start++
			}
			spans = append(spans, [2]int{start, int(dec.InputOffset())})
		}
	}
	return spans, open, nil
}

func (c *extCLI) logs(name string, follow bool) error {
	if !validExtName(name) {
		return usageError{fmt.Sprintf("%q is not an extension name", name)}
	}
	path := filepath.Join(c.home, "logs", "ext-"+name+".log")
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("extension %q has no log yet (%s); it is written once the extension runs", name, path)
		}
		return err
	}
	defer func() { f.Close() }()
	var pending []byte // an unfinished last line
	copyOut := func() error {
		b, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		pending = append(pending, b...)
		i := bytes.LastIndexByte(pending, '\n')
		if !follow {
			i = len(pending) - 1
		}
		if i < 0 {
			return nil
		}
		_, err = io.WriteString(c.stdout, sanitize(string(pending[:i+1])))
		pending = append(pending[:0], pending[i+1:]...)
		return err
	}
	if err := copyOut(); err != nil || !follow {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		// Rotation replaces the file: start over on the new one.
		if st, err := os.Stat(path); err == nil {
			if cur, err := f.Stat(); err == nil && !os.SameFile(st, cur) {
				if nf, err := os.Open(path); err == nil {
					f.Close()
					f = nf
				}
			}
		}
		if err := copyOut(); err != nil {
			return err
		}
	}
}
