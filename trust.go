package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Workspace trust: a repository is not the user. What a project directory
// defines that starts a process — its MCP servers, extensions, validators,
// hooks — runs only once the user trusted that directory and exactly that
// set of programs. $ZOT_HOME/trust.json remembers, per directory (absolute,
// symlinks resolved), each program the user saw: when one is added or
// changed, the directory is untrusted again. wire.go lists what a project
// would run (the plugins' sources are its business); this file checks,
// records and shows it, and is `zot trust`.

// trustEntry is one program a project would start. Its fields are what the
// user is shown and what the trust covers; secrets (header and env values)
// are not among them.
type trustEntry struct {
	Kind    string   `json:"kind"`            // mcp, extension, validator, hook
	Source  string   `json:"source"`          // the file that defines it, relative to the project
	Name    string   `json:"name"`            // the server, extension, validator name; the hook's event and matcher
	Command string   `json:"command"`         // the command line or URL as configured
	Names   []string `json:"names,omitempty"` // environment variables or headers it sets (names only)
	// Content is the SHA-256 of the files it runs that the project holds:
	// an extension's manifest and exec file, every project file its
	// command line names (a script, an interpreter's argument). A changed
	// file is a changed program.
	Content string `json:"content,omitempty"`
	// Files are the project files its command line names (absolute,
	// symlinks resolved): the sandbox keeps them read-only. Their digests
	// are in Content.
	Files []string `json:"-"`
	// Tightens: a rules file with nothing trust withholds (deny and ask
	// rules only). It needs no trust in a directory never trusted; once
	// one is, it is part of what was trusted like any other entry.
	Tightens bool `json:"-"`
}

// Kinds of project programs.
const (
	trustMCP       = "mcp"
	trustExtension = "extension"
	trustValidator = "validator"
	trustHook      = "hook"
	trustPrompt    = "prompt"     // a template's !`command` lines
	trustRules     = "permission" // a rules file's allow rules, defaults and definitions
)

func (e trustEntry) key() string { return e.Kind + "\x00" + e.Source + "\x00" + e.Name }

// sum is the entry's digest: two entries with the same sum run the same.
func (e trustEntry) sum() string {
	b, _ := json.Marshal(e)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// String is the entry on one line, safe for a terminal.
func (e trustEntry) String() string {
	s := fmt.Sprintf("%s: %s", e.Label(), e.Command)
	if len(e.Names) > 0 {
		s += " [sets " + strings.Join(e.Names, ", ") + "]"
	}
	return oneLineText(s)
}

// Label names the entry without its command: `MCP server "x" (.mcp.json)`.
func (e trustEntry) Label() string {
	kind := map[string]string{trustMCP: "MCP server", trustExtension: "extension", trustValidator: "validator", trustHook: "hook", trustPrompt: "prompt template", trustRules: "permission rules"}[e.Kind]
	return fmt.Sprintf("%s %q (%s)", kind, e.Name, e.Source)
}

// oneLineText is s safe for a terminal and on one line: a line break in a
// command is shown as ⏎, never hidden.
func oneLineText(s string) string {
	return strings.NewReplacer("\r\n", "⏎", "\n", "⏎", "\r", "⏎").Replace(sanitize(s))
}

// trustRecord is one trusted directory in trust.json.
type trustRecord struct {
	TrustedAt time.Time    `json:"trusted_at"`
	Digest    string       `json:"digest"` // of every entry's sum, for a reader comparing records
	Entries   []trustEntry `json:"entries"`
}

// trustFile is $ZOT_HOME/trust.json.
type trustFile struct {
	Version  int                     `json:"version"`
	Projects map[string]*trustRecord `json:"projects"`
	// Declined are the directories whose programs the user chose, in the
	// TUI's dialog, to go on without: not asked again while the programs
	// are the ones they saw.
	Declined map[string]*trustDecline `json:"declined,omitempty"`
}

// trustDecline is one "continue without them": when, and the digest of
// the programs the user saw (entriesDigest).
type trustDecline struct {
	DeclinedAt time.Time `json:"declined_at"`
	Digest     string    `json:"digest"`
}

// trustChange is an entry that differs from what the user trusted.
type trustChange struct {
	Change string // new, changed, removed
	Entry  trustEntry
}

func (c trustChange) String() string { return c.Change + ": " + c.Entry.String() }

// trustStatus is where a project directory stands.
type trustStatus struct {
	Dir     string       // the trust key: absolute, symlinks resolved
	Entries []trustEntry // what it would run now
	// Trusted says every entry is one the user trusted (a project that
	// would run nothing is trusted). Changes lists the entries that are new
	// or changed, and those of the kinds looked at that are gone.
	Trusted bool
	Changes []trustChange
	Warning string // trust.json could not be read: everything counts as untrusted
	// Declined says the user chose to go on without exactly these
	// programs (recordDecline): the TUI does not ask again.
	Declined bool
	// recorded: trust.json holds a record of the directory.
	recorded bool
}

// Pending are the changes that keep the directory untrusted: new and
// changed entries, and a removed rules file (its deny rules went with
// it); a removed program cannot run. A rules file that only tightens is
// no change in a directory never trusted.
func (st trustStatus) Pending() []trustChange {
	var out []trustChange
	for _, c := range st.Changes {
		switch {
		case c.Change == "removed" && c.Entry.Kind != trustRules:
		case c.Change == "new" && c.Entry.Tightens && !st.recorded:
		default:
			out = append(out, c)
		}
	}
	return out
}

// trustPath is trust.json; trustLockPath serialises its writers.
func trustPath(home string) string     { return filepath.Join(home, "trust.json") }
func trustLockPath(home string) string { return filepath.Join(home, "trust.json.lock") }

// trustKey is the directory a trust is recorded for: absolute, with its
// symlinks resolved, so that one project reached by two paths is one.
func trustKey(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", abs, err)
	}
	return real, nil
}

// loadTrustFile reads trust.json; a missing file trusts nothing. One that
// cannot be read, is not a trust file, or that other users may write is an
// error: the caller trusts nothing then (fail closed).
func loadTrustFile(home string) (trustFile, error) {
	tf := trustFile{Version: 1, Projects: map[string]*trustRecord{}}
	path := trustPath(home)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return tf, nil
	}
	if err != nil {
		return tf, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o022 != 0 {
		return tf, fmt.Errorf("%s may be written by other users (mode %04o): run chmod 600 %q", path, st.Mode().Perm(), path)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return tf, fmt.Errorf("read %s: %w", path, err)
	}
	var read trustFile
	if err := json.Unmarshal(b, &read); err != nil || read.Version != 1 {
		if err == nil {
			err = fmt.Errorf("version %d, want 1", read.Version)
		}
		return tf, fmt.Errorf("%s is not a trust file zot can read (%v)", path, err)
	}
	for dir, r := range read.Projects {
		if r != nil {
			tf.Projects[dir] = r
		}
	}
	for dir, d := range read.Declined {
		if d != nil {
			if tf.Declined == nil {
				tf.Declined = map[string]*trustDecline{}
			}
			tf.Declined[dir] = d
		}
	}
	return tf, nil
}

// checkTrust compares what dir would run with what the user trusted there.
// kinds are the kinds of program entries lists (a session with hooks off
// lists none, and the hooks the user trusted stay trusted).
func checkTrust(home, dir string, entries []trustEntry, kinds []string) trustStatus {
	st := trustStatus{Entries: entries}
	key, err := trustKey(dir)
	if err != nil {
		st.Dir, st.Warning = dir, err.Error()
		return st
	}
	st.Dir = key
	if len(entries) == 0 {
		st.Trusted = true
		return st
	}
	tf, err := loadTrustFile(home)
	if err != nil {
		st.Warning = err.Error() + "; every project counts as untrusted until it is fixed (zot trust replaces it, keeping a copy in trust.json.bad)"
	}
	var trusted []trustEntry
	if r := tf.Projects[key]; r != nil && err == nil {
		trusted, st.recorded = r.Entries, true
	}
	st.Changes = diffTrust(trusted, entries, kinds)
	st.Trusted = err == nil && len(st.Pending()) == 0
	if d := tf.Declined[key]; d != nil && err == nil && !st.Trusted {
		st.Declined = d.Digest == entriesDigest(entries)
	}
	return st
}

// diffTrust lists how entries differ from trusted: new and changed entries
// in entries' order, then trusted ones of kinds that are gone.
func diffTrust(trusted, entries []trustEntry, kinds []string) []trustChange {
	old := map[string]trustEntry{}
	for _, e := range trusted {
		old[e.key()] = e
	}
	var out []trustChange
	now := map[string]bool{}
	for _, e := range entries {
		now[e.key()] = true
		switch was, ok := old[e.key()]; {
		case !ok:
			out = append(out, trustChange{"new", e})
		case was.sum() != e.sum():
			out = append(out, trustChange{"changed", e})
		}
	}
	for _, e := range trusted {
		if !now[e.key()] && slices.Contains(kinds, e.Kind) {
			out = append(out, trustChange{"removed", e})
		}
	}
	return out
}

// recordTrust remembers that the user trusts dir to run entries. The
// entries of kinds replace those recorded; recorded entries of other kinds
// stay. trust.json is rewritten whole under a lock, so that zot processes
// recording at once keep each other's entries; a file zot cannot read is
// kept as trust.json.bad and replaced.
func recordTrust(home, dir string, entries []trustEntry, kinds []string) error {
	key, err := trustKey(dir)
	if err != nil {
		return err
	}
	return updateTrustFile(home, func(tf *trustFile) {
		r := &trustRecord{TrustedAt: time.Now().UTC().Truncate(time.Second)}
		if old := tf.Projects[key]; old != nil {
			for _, e := range old.Entries {
				if !slices.Contains(kinds, e.Kind) {
					r.Entries = append(r.Entries, e)
				}
			}
		}
		r.Entries = append(r.Entries, entries...)
		sort.SliceStable(r.Entries, func(i, j int) bool { return r.Entries[i].key() < r.Entries[j].key() })
		r.Digest = entriesDigest(r.Entries)
		tf.Projects[key] = r
		delete(tf.Declined, key)
	})
}

// entriesDigest is the digest of a set of programs, in any order.
func entriesDigest(entries []trustEntry) string {
	sorted := append([]trustEntry(nil), entries...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].key() < sorted[j].key() })
	h := sha256.New()
	for _, e := range sorted {
		h.Write([]byte(e.sum()))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// recordDecline remembers that the user chose to go on without the
// programs dir would run now: the TUI does not ask again until they
// change, or `zot trust --revoke` forgets the answer.
func recordDecline(home, dir string, entries []trustEntry) error {
	key, err := trustKey(dir)
	if err != nil {
		return err
	}
	return updateTrustFile(home, func(tf *trustFile) {
		if tf.Declined == nil {
			tf.Declined = map[string]*trustDecline{}
		}
		tf.Declined[key] = &trustDecline{DeclinedAt: time.Now().UTC().Truncate(time.Second), Digest: entriesDigest(entries)}
	})
}

// revokeTrust forgets dir, trusted or declined; it reports which it was.
func revokeTrust(home, dir string) (trusted, declined bool, err error) {
	key, err := trustKey(dir)
	if err != nil {
		key, _ = filepath.Abs(dir) // a directory that is gone can still be forgotten
	}
	err = updateTrustFile(home, func(tf *trustFile) {
		_, trusted = tf.Projects[key]
		_, declined = tf.Declined[key]
		delete(tf.Projects, key)
		delete(tf.Declined, key)
	})
	return trusted, declined, err
}

// updateTrustFile reads, changes and rewrites trust.json while holding an
// exclusive lock on trust.json.lock.
func updateTrustFile(home string, change func(*trustFile)) error {
	return underLock(trustLockPath(home), func() error { return changeTrustFile(home, change) })
}

func changeTrustFile(home string, change func(*trustFile)) error {
	path := trustPath(home)
	tf, err := loadTrustFile(home)
	if err != nil {
		if _, statErr := os.Stat(path); statErr == nil {
			if rerr := os.Rename(path, path+".bad"); rerr != nil {
				return fmt.Errorf("%v; moving it aside failed: %w", err, rerr)
			}
		}
	}
	change(&tf)
	b, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// trustSkippedLine is the one line -p, --json and rpc print when they
// leave a project's programs out.
func trustSkippedLine(st trustStatus) string {
	var names []string
	for _, e := range st.Entries {
		names = append(names, e.Kind+" "+e.Name)
	}
	why := "the directory is not trusted"
	if n := len(st.Pending()); n > 0 && n < len(st.Entries) {
		why = fmt.Sprintf("%d of them new or changed since you trusted it", n)
	}
	return oneLineText(fmt.Sprintf("not started: %s's own programs (%s; %s); to run them: zot trust %s (or --trust-project for this run)",
		st.Dir, strings.Join(names, ", "), why, quoteDir(st.Dir)))
}

// quoteDir quotes a directory for a POSIX shell when it needs it (the
// validators' shellQuote is theirs: plugins do not share code).
func quoteDir(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var trustUsage = commandHelp{
	name:  "zot trust",
	about: "let a project directory run its own programs",
	usage: "zot trust [DIR] [--yes]     show what DIR (default: here) would run, and trust it after a yes\n  zot trust --list            the trusted directories, and those you went on without\n  zot trust --revoke [DIR]    forget DIR, trusted or not now (the TUI asks again)",
	notes: `A trusted directory runs its own MCP servers, extensions, validators, hooks
and prompt-template commands; when they change, zot asks again.
docs/security.md says what trust covers.
`,
}

// runTrustCommand is `zot trust`. collect lists what a directory would
// run, the kinds it looked at and the files it could not read (wire.go
// knows the plugins' sources).
func runTrustCommand(args []string, collect func(dir string) (entries []trustEntry, kinds, problems []string), stdin io.Reader, stdout, stderr io.Writer) int {
	var yes, list, revoke bool
	words, err := subcommandArgs(args, map[string]*bool{"--yes": &yes, "-y": &yes, "--list": &list, "--revoke": &revoke}, nil)
	switch {
	case err != nil, len(words) > 1, list && (revoke || yes || len(words) > 0):
		if err == nil {
			err = errors.New("wrong arguments")
		}
		fmt.Fprintf(stderr, "zot trust: %v\n%s", err, trustUsage.text(""))
		return exitUsage
	}
	home := zotHome()
	if list {
		return trustList(home, stdout, stderr)
	}
	dir := "."
	if len(words) == 1 {
		dir = words[0]
	}
	if revoke {
		trusted, declined, err := revokeTrust(home, dir)
		if key, kerr := trustKey(dir); kerr == nil {
			dir = key // say which directory ".", or a relative path, was
		} else if abs, aerr := filepath.Abs(dir); aerr == nil {
			dir = abs
		}
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "zot trust: %s\n", sanitize(err.Error()))
			return exitFailure
		case trusted:
			fmt.Fprintf(stdout, "revoked: %s runs none of its own programs until you trust it again\n", sanitize(dir))
		case declined:
			fmt.Fprintf(stdout, "forgot your \"continue without them\" for %s: the next session there asks again\n", sanitize(dir))
		default:
			fmt.Fprintf(stdout, "%s was not trusted\n", sanitize(dir))
		}
		return exitOK
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "zot trust: %s is not a directory\n", sanitize(dir))
		return exitUsage
	}
	entries, kinds, problems := collect(dir)
	for _, p := range problems {
		fmt.Fprintf(stderr, "zot: %s\n", sanitize(p))
	}
	st := checkTrust(home, dir, entries, kinds)
	if st.Warning != "" {
		fmt.Fprintf(stderr, "zot: warning: %s\n", sanitize(st.Warning))
	}
	if len(entries) == 0 {
		fmt.Fprintf(stdout, "%s defines no program of its own (MCP servers, extensions, validators, hooks): nothing to trust\n", sanitize(st.Dir))
		return exitOK
	}
	fmt.Fprintf(stdout, "%s would run:\n", sanitize(st.Dir))
	changed := map[string]string{}
	for _, c := range st.Changes {
		changed[c.Entry.key()] = c.Change
	}
	for _, e := range entries {
		mark := "  "
		if c := changed[e.key()]; c != "" {
			mark = "  (" + c + ") "
		}
		fmt.Fprintf(stdout, "%s%s\n", mark, e)
	}
	for _, c := range st.Changes {
		if c.Change == "removed" {
			fmt.Fprintf(stdout, "  (removed) %s\n", c.Entry)
		}
	}
	if st.Trusted && st.Warning == "" {
		fmt.Fprintln(stdout, "already trusted: these run")
		return exitOK
	}
	if !yes {
		fmt.Fprintf(stdout, "They run with your privileges and files. Trust %s and let them run? [y/N] ", sanitize(st.Dir))
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(stdout, "not trusted")
			return exitFailure
		}
	}
	if err := recordTrust(home, dir, entries, kinds); err != nil {
		fmt.Fprintf(stderr, "zot trust: %s\n", sanitize(err.Error()))
		return exitFailure
	}
	fmt.Fprintf(stdout, "trusted %s (recorded in %s)\n", sanitize(st.Dir), trustPath(home))
	return exitOK
}

func trustList(home string, stdout, stderr io.Writer) int {
	tf, err := loadTrustFile(home)
	if err != nil {
		fmt.Fprintf(stderr, "zot trust: %s\n", sanitize(err.Error()))
		return exitFailure
	}
	if len(tf.Projects) == 0 {
		fmt.Fprintln(stdout, "no trusted directories")
	}
	for _, dir := range sortedKeys(tf.Projects) {
		r := tf.Projects[dir]
		fmt.Fprintf(stdout, "%s  trusted %s, programs: %d\n", sanitize(dir), r.TrustedAt.Local().Format("2006-01-02 15:04"), len(r.Entries))
		for _, e := range r.Entries {
			fmt.Fprintf(stdout, "  %s\n", e)
		}
	}
	for _, dir := range sortedKeys(tf.Declined) {
		fmt.Fprintf(stdout, "%s  continued without its programs %s (zot trust --revoke %s asks again)\n", sanitize(dir), tf.Declined[dir].DeclinedAt.Local().Format("2006-01-02 15:04"), quoteDir(dir))
	}
	return exitOK
}
