package main

import (
	"bytes"
	"context"
	"crypto/rand"
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
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Checkpoints: before each tool call that may change files (write, edit,
// bash, an extension's or MCP server's tool) zot records the state of the
// project — and, with --sandbox, of the other directories commands may
// write — and after the call it records the state again, so that a call, a
// prompt or a session's changes can be undone, commands included.
//
// The store is $ZOT_HOME/checkpoints/<project hash>/ (0700):
//
//	project.json          the directory it is for
//	objects/ab/cdef…      content-addressed by SHA-256: each file's bytes
//	                      once, symlink targets, and trees (one per
//	                      directory: name, kind, mode, hash of each entry)
//	index                 a cache of path → stat → hash, so an unchanged
//	                      file costs a stat, not a read
//	sessions/<id>/000001.json  one manifest per checkpoint: the root trees
//	                      before and after the call, and what it changed
//	lock, gen             one snapshot or restore at a time; the prune
//	                      generation
//
// Objects are written to a temp file and renamed, and verified against
// their name whenever they are read, so a damaged store is reported and
// never used to overwrite files. Manifests are written whole and carry a
// checksum of their own. What a snapshot does not cover — ignored
// files, .git, build caches, files over the size limit, special files — is
// still named in its tree (as "excluded"), so a restore never removes a
// file it never recorded.

// CheckpointSettings are the "checkpoints" object of $ZOT_HOME/config.json.
type CheckpointSettings struct {
	Enabled bool
	// MaxFileSize: bigger files are not recorded (nor restored).
	MaxFileSize int64
	// MaxFiles bounds the files of one root: a root with more is not
	// covered at all (say, zot started in the home directory).
	MaxFiles int
	// MaxProjectSize and MaxTotalSize bound the store of one project and
	// of all of them; pruning removes the oldest sessions first.
	MaxProjectSize, MaxTotalSize int64
	// Exclude are more gitignore patterns, matched after the project's.
	Exclude []string
}

// DefaultCheckpointSettings are the settings without a config.json.
func DefaultCheckpointSettings() CheckpointSettings {
	return CheckpointSettings{
		Enabled:        true,
		MaxFileSize:    10 << 20,
		MaxFiles:       100_000,
		MaxProjectSize: 1 << 30,
		MaxTotalSize:   4 << 30,
	}
}

// LoadCheckpointSettings reads "checkpoints" from config.json over the
// defaults. A bad value is an error naming it; the defaults stand for it.
func LoadCheckpointSettings(home string) (CheckpointSettings, error) {
	set := DefaultCheckpointSettings()
	path := filepath.Join(home, "config.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return set, nil
	}
	if err != nil {
		return set, fmt.Errorf("read %s: %w", path, err)
	}
	var top struct {
		Checkpoints *struct {
			Enabled        *bool           `json:"enabled"`
			MaxFileSize    json.RawMessage `json:"max_file_size"`
			MaxFiles       *int            `json:"max_files"`
			MaxProjectSize json.RawMessage `json:"max_project_size"`
			MaxTotalSize   json.RawMessage `json:"max_total_size"`
			Exclude        []string        `json:"exclude"`
		} `json:"checkpoints"`
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return set, fmt.Errorf("read %s: \"checkpoints\": %w", path, err)
	}
	c := top.Checkpoints
	if c == nil {
		return set, nil
	}
	if c.Enabled != nil {
		set.Enabled = *c.Enabled
	}
	if c.MaxFiles != nil {
		if *c.MaxFiles < 1 {
			return set, fmt.Errorf("read %s: \"checkpoints\": \"max_files\" must be at least 1", path)
		}
		set.MaxFiles = *c.MaxFiles
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *int64
	}{{"max_file_size", c.MaxFileSize, &set.MaxFileSize}, {"max_project_size", c.MaxProjectSize, &set.MaxProjectSize}, {"max_total_size", c.MaxTotalSize, &set.MaxTotalSize}} {
		if len(f.raw) == 0 || string(f.raw) == "null" {
			continue
		}
		n, err := parseByteSize(f.raw)
		if err != nil {
			return set, fmt.Errorf("read %s: \"checkpoints\": %q: %v", path, f.name, err)
		}
		*f.dst = n
	}
	set.Exclude = c.Exclude
	return set, nil
}

// parseByteSize reads a size: a number of bytes, or a string such as
// "512KB", "10MB", "2GB" (powers of 1024).
func parseByteSize(raw json.RawMessage) (int64, error) {
	var n int64
	if json.Unmarshal(raw, &n) == nil {
		if n < 0 {
			return 0, errors.New("a size cannot be negative")
		}
		return n, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0, fmt.Errorf("want a number of bytes or a string such as \"10MB\", not %s", raw)
	}
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a size such as \"10MB\"", s)
	}
	return int64(v * float64(mult)), nil
}

// Record kinds.
const (
	ckKindStep    = "step"    // before (and after) a tool call
	ckKindRestore = "restore" // before (and after) a restore
)

// ckRecord is one checkpoint's manifest. Roots hold the tree of each
// covered directory before the call and, once Done, after it.
type ckRecord struct {
	Version     int       `json:"version"`
	ID          string    `json:"id"`
	Session     string    `json:"session"`
	SessionPath string    `json:"session_path,omitempty"`
	Seq         int       `json:"seq"`
	Kind        string    `json:"kind"`
	Time        time.Time `json:"time"`
	Tool        string    `json:"tool,omitempty"`
	CallID      string    `json:"call_id,omitempty"`
	// Prompt is the user's prompt the call answers (cut), and PromptTime
	// the time of its message, which finds it in the transcript again.
	Prompt     string     `json:"prompt,omitempty"`
	PromptTime *time.Time `json:"prompt_time,omitempty"`
	Target     string     `json:"target,omitempty"` // a restore's checkpoint
	Roots      []ckRoot   `json:"roots"`
	Done       bool       `json:"done"`
	// Changed are the paths the call changed (relative for the project,
	// absolute elsewhere), the first maxListedChanges of them.
	Changed     []string `json:"changed,omitempty"`
	MoreChanged int      `json:"more_changed,omitempty"`
	// Notes say what the snapshot could not cover.
	Notes []string `json:"notes,omitempty"`

	file string // where it was read from
}

// ckRoot is one covered directory in a record. An empty Before means the
// directory was not covered by this checkpoint (too many files).
type ckRoot struct {
	Path   string `json:"path"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

const (
	checkpointVersion = 1
	maxListedChanges  = 200
	maxPromptInRecord = 200
)

// ckDamaged is a part of the store that cannot be trusted: a manifest or
// an object that does not read back as written.
type ckDamaged struct {
	path string
	why  string
}

func (e *ckDamaged) Error() string {
	return fmt.Sprintf("checkpoint store damaged: %s: %s (zot restores nothing from it)", e.path, e.why)
}

// Checkpoints is the store of one project for one zot process. Its methods
// are safe for concurrent use; the file lock keeps other processes' work on
// the same project apart from its own.
type Checkpoints struct {
	home  string
	cwd   string
	dir   string   // $ZOT_HOME/checkpoints/<project hash>
	roots []string // the covered directories, the project first
	set   CheckpointSettings
	// now is the clock of the racy-file rule (checkpoints_walk.go).
	now func() time.Time
	// Log reports what goes wrong beside a checkpoint (a prune's trouble).
	Log func(format string, args ...any)

	mu        sync.Mutex
	index     map[string]ckIndexEntry // nil until loaded
	indexGen  string                  // the gen file's content when it was loaded
	indexDirt bool
	known     map[string]bool      // objects known to be in the store
	trees     map[string][]ckEntry // parsed trees, for one snapshot or restore
	ignores   map[string]*ignoreCache
	pruned    bool // this process asked for its daily prune
	// uncovered are the roots found too big in this run, and why: they
	// are not walked again.
	uncovered map[string]string
	counted   map[string]bool // roots whose files were counted
	lastSeq   map[string]int  // by session: the number of the manifest written last
}

// checkpointDir is where a project's checkpoints live.
func checkpointDir(home, cwd string) string {
	if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}
	sum := sha256.Sum256([]byte(cwd))
	return filepath.Join(home, "checkpoints", hex.EncodeToString(sum[:])[:16])
}

// OpenCheckpoints prepares the store of the project cwd; extra are more
// directories to cover (sandbox_writable). Nothing is written until the
// first checkpoint.
func OpenCheckpoints(home, cwd string, extra []string, set CheckpointSettings) *Checkpoints {
	roots := []string{cwd}
	for _, d := range extra {
		if !slices.ContainsFunc(roots, func(r string) bool { return pathWithin(d, r) || pathWithin(r, d) }) {
			roots = append(roots, d)
		}
	}
	return &Checkpoints{home: home, cwd: cwd, dir: checkpointDir(home, cwd), roots: roots, set: set, now: time.Now,
		known: map[string]bool{}, trees: map[string][]ckEntry{}, ignores: map[string]*ignoreCache{},
		uncovered: map[string]string{}, counted: map[string]bool{}, lastSeq: map[string]int{}}
}

// ckStepInfo is what a checkpoint records about the call it precedes.
type ckStepInfo struct {
	Session, SessionPath string
	Tool, CallID         string
	Prompt               string
	PromptTime           time.Time
}

// AroundToolRun is the agent hook that takes a checkpoint around each call
// of a tool that mayChange files (the call: a bash line may not), for the
// session that session names.
// What a checkpoint does not cover, and a checkpoint that fails, are said
// in the agent's log (once each); the call runs either way.
func (c *Checkpoints) AroundToolRun(agent *Agent, session func() (id, path string), mayChange func(call ToolCall) bool) func(ctx context.Context, call ToolCall) func() {
	noted := map[string]bool{}
	return func(ctx context.Context, call ToolCall) func() {
		if !mayChange(call) {
			return nil
		}
		info := ckStepInfo{Tool: call.Name, CallID: call.ID}
		info.Session, info.SessionPath = session()
		info.Prompt, info.PromptTime = agent.lastPrompt()
		after, notes, err := c.Before(info)
		for _, n := range notes {
			if !noted[n] {
				noted[n] = true
				agent.logf("checkpoints: %s", n)
			}
		}
		if err != nil {
			agent.logf("checkpoint before %s: %v; the call runs without one", call.Name, err)
			return nil
		}
		return func() {
			if err := after(); err != nil {
				agent.logf("checkpoint after %s: %v", call.Name, err)
			}
		}
	}
}

// Before records the covered directories before a call and returns the
// function that records them after it (nil with the error when the
// checkpoint could not be taken: the call then runs without one). notes
// say what the checkpoint does not cover.
func (c *Checkpoints) Before(info ckStepInfo) (after func() error, notes []string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pruned {
		c.pruned = true
		c.maybeDailyPrune(info.Session) // before this project's lock, which it takes
	}
	unlock, err := c.lock()
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	rec := &ckRecord{Version: checkpointVersion, Session: info.Session, SessionPath: info.SessionPath, Kind: ckKindStep,
		Time: c.now().UTC(), Tool: info.Tool, CallID: info.CallID, Prompt: cutRunes(info.Prompt, maxPromptInRecord)}
	if !info.PromptTime.IsZero() {
		pt := info.PromptTime
		rec.PromptTime = &pt
	}
	if err := c.snapshotInto(rec, false); err != nil {
		return nil, nil, err
	}
	if err := c.saveNew(rec); err != nil {
		return nil, nil, err
	}
	return func() error { return c.finish(rec) }, rec.Notes, nil
}

// finish records the after state of rec and what changed.
func (c *Checkpoints) finish(rec *ckRecord) error {
	unlock, err := c.lockBoth()
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.snapshotInto(rec, true); err != nil {
		return err
	}
	rec.Done = true
	c.noteChanges(rec)
	return c.save(rec)
}

// snapshotInto records each root's tree as Before (or After) of rec.
func (c *Checkpoints) snapshotInto(rec *ckRecord, after bool) error {
	if err := c.loadIndex(); err != nil {
		return err
	}
	if !after {
		rec.Roots = nil
		for _, r := range c.roots {
			rec.Roots = append(rec.Roots, ckRoot{Path: r})
		}
	}
	for i := range rec.Roots {
		r := &rec.Roots[i]
		if after && r.Before == "" {
			continue
		}
		tree, note, err := c.snapshotRoot(r.Path)
		if err != nil {
			return err
		}
		if note != "" && !after {
			rec.Notes = append(rec.Notes, note)
		}
		if after {
			r.After = tree
		} else {
			r.Before = tree
		}
	}
	return c.saveIndex()
}

// noteChanges fills rec.Changed from its trees.
func (c *Checkpoints) noteChanges(rec *ckRecord) {
	var changed []string
	for i, r := range rec.Roots {
		if r.Before == "" || r.After == "" {
			continue
		}
		prefix := ""
		if i > 0 || r.Path != c.cwd {
			prefix = r.Path + string(filepath.Separator)
		}
		c.diffPaths(r.Before, r.After, "", func(rel string) {
			changed = append(changed, prefix+rel)
		})
	}
	rec.Changed, rec.MoreChanged = changed, 0
	if len(changed) > maxListedChanges {
		rec.Changed, rec.MoreChanged = changed[:maxListedChanges], len(changed)-maxListedChanges
	}
}

// Sessions and their records.

func (c *Checkpoints) sessionDir(session string) string {
	return filepath.Join(c.dir, "sessions", session)
}

// saveNew gives rec the next number of its session and writes it. The
// number this process gave last is the start, so a long session does not
// list its manifests at every step; the session's directory is listed
// when there is none, or when another process (holding the same lock) has
// written the next one since.
func (c *Checkpoints) saveNew(rec *ckRecord) error {
	dir := c.sessionDir(rec.Session)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	seq := c.lastSeq[rec.Session]
	if _, err := os.Lstat(recordFile(dir, seq+1)); seq == 0 || !errors.Is(err, fs.ErrNotExist) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		for _, e := range entries {
			if n, ok := recordSeq(e.Name()); ok {
				seq = max(seq, n)
			}
		}
	}
	rec.Seq = seq + 1
	rec.ID = fmt.Sprintf("%s-%d", rec.Session, rec.Seq)
	rec.file = recordFile(dir, rec.Seq)
	if err := c.save(rec); err != nil {
		return err
	}
	c.lastSeq[rec.Session] = rec.Seq
	return nil
}

func recordFile(dir string, seq int) string { return filepath.Join(dir, fmt.Sprintf("%06d.json", seq)) }

// recordSeq reads the number of a manifest's file name.
func recordSeq(name string) (int, bool) {
	base, ok := strings.CutSuffix(name, ".json")
	if !ok || len(base) != 6 {
		return 0, false
	}
	n, err := strconv.Atoi(base)
	return n, err == nil && n > 0
}

// save writes a manifest whole: its JSON, then a line with the JSON's
// SHA-256, to a temp file renamed over it. It is not synced: the objects
// it names are not either, and after a power loss a manifest lost or torn
// (its checksum tells) is a checkpoint missing, never a wrong one; a sync
// per tool call would cost a millisecond of every call.
func (c *Checkpoints) save(rec *ckRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	data := fmt.Appendf(b, "\nsha256 %x\n", sum)
	if err := storeWrite(rec.file, data, false); err != nil {
		return fmt.Errorf("checkpoint: write %s: %w", rec.file, err)
	}
	return nil
}

// storeWrite writes path whole: a temp file of the store (named so that
// prune removes one a crash left), renamed over path. durable syncs the
// file and its directory, for the project file and the generation;
// manifests, objects and the index go without, since a torn one is caught
// by its checksum or hash or is only a cache.
func storeWrite(path string, data []byte, durable bool) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil && durable {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if !durable {
		return nil
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		return err
	}
	return nil
}

// readRecord reads a manifest, refusing one whose checksum does not match.
func readRecord(path string) (*ckRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	body, tail, ok := bytes.Cut(b, []byte("\nsha256 "))
	if !ok {
		return nil, &ckDamaged{path, "the manifest has no checksum line (cut off?)"}
	}
	sum := sha256.Sum256(body)
	if strings.TrimSpace(string(tail)) != hex.EncodeToString(sum[:]) {
		return nil, &ckDamaged{path, "the manifest does not match its checksum"}
	}
	var rec ckRecord
	if err := json.Unmarshal(body, &rec); err != nil {
		return nil, &ckDamaged{path, "the manifest is not valid JSON: " + err.Error()}
	}
	if rec.Version > checkpointVersion {
		return nil, fmt.Errorf("checkpoint %s was written by a newer zot (format %d); upgrade zot to use it", path, rec.Version)
	}
	if rec.ID == "" || rec.Seq < 1 || (rec.Kind != ckKindStep && rec.Kind != ckKindRestore) {
		return nil, &ckDamaged{path, "the manifest lacks its id, number or kind"}
	}
	for _, r := range rec.Roots {
		for _, h := range []string{r.Before, r.After} {
			if h != "" && !isObjectHash(h) {
				return nil, &ckDamaged{path, fmt.Sprintf("tree %q is not a SHA-256", h)}
			}
		}
		if !filepath.IsAbs(r.Path) {
			return nil, &ckDamaged{path, fmt.Sprintf("root %q is not an absolute path", r.Path)}
		}
	}
	rec.file = path
	return &rec, nil
}

// ckSessionRecords is one session's manifests in order; damaged are the
// files that could not be read (named in errors).
type ckSessionRecords struct {
	ID      string
	Records []*ckRecord
	Damaged []error
}

// sessionRecords reads a session's manifests, oldest first.
func (c *Checkpoints) sessionRecords(session string) (ckSessionRecords, error) {
	out := ckSessionRecords{ID: session}
	dir := c.sessionDir(session)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("list checkpoints in %s: %w", dir, err)
	}
	for _, e := range entries {
		if _, ok := recordSeq(e.Name()); !ok {
			continue
		}
		rec, err := readRecord(filepath.Join(dir, e.Name()))
		if err != nil {
			out.Damaged = append(out.Damaged, err)
			continue
		}
		out.Records = append(out.Records, rec)
	}
	sort.Slice(out.Records, func(i, j int) bool { return out.Records[i].Seq < out.Records[j].Seq })
	return out, nil
}

// ckSessionInfo is a session of the store, for lists and pruning.
type ckSessionInfo struct {
	ID   string
	Last time.Time // the newest manifest's modification time
	N    int
}

// sessions lists the store's sessions, the most recently used last.
func (c *Checkpoints) sessions() ([]ckSessionInfo, error) {
	return listCheckpointSessions(c.dir)
}

func listCheckpointSessions(projectDir string) ([]ckSessionInfo, error) {
	dir := filepath.Join(projectDir, "sessions")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list checkpoint sessions in %s: %w", dir, err)
	}
	var out []ckSessionInfo
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		info := ckSessionInfo{ID: e.Name()}
		files, _ := os.ReadDir(filepath.Join(dir, e.Name()))
		for _, f := range files {
			if _, ok := recordSeq(f.Name()); !ok {
				continue
			}
			info.N++
			if fi, err := f.Info(); err == nil && fi.ModTime().After(info.Last) {
				info.Last = fi.ModTime()
			}
		}
		if info.N > 0 {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Last.Equal(out[j].Last) {
			return out[i].Last.Before(out[j].Last)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// findRecord finds a checkpoint by id (session-seq) and reads its
// session's manifests with it.
func (c *Checkpoints) findRecord(id string) (*ckRecord, ckSessionRecords, error) {
	session, seqText, ok := strings.Cut(id, "-")
	seq, err := strconv.Atoi(seqText)
	if !ok || err != nil || seq < 1 || !isSessionName(session) {
		return nil, ckSessionRecords{}, fmt.Errorf("%q is not a checkpoint id (they look like 3fa2b1c0-4; zot checkpoints list shows them)", id)
	}
	recs, err := c.sessionRecords(session)
	if err != nil {
		return nil, recs, err
	}
	for _, r := range recs.Records {
		if r.Seq == seq {
			return r, recs, nil
		}
	}
	file := filepath.Join(c.sessionDir(session), fmt.Sprintf("%06d.json", seq))
	for _, d := range recs.Damaged {
		var dmg *ckDamaged
		if errors.As(d, &dmg) && dmg.path == file {
			return nil, recs, fmt.Errorf("checkpoint %s: %w", id, d)
		}
		if strings.Contains(d.Error(), file) {
			return nil, recs, d
		}
	}
	return nil, recs, fmt.Errorf("no checkpoint %s in %s (zot checkpoints list shows them)", id, c.dir)
}

// isSessionName accepts the ids zot gives sessions and runs: short,
// and safe as a directory name.
func isSessionName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r == '_') {
			return false
		}
	}
	return true
}

// newRunID names the checkpoints of a run without a session file.
func newRunID() string {
	var b [4]byte
	rand.Read(b[:])
	return "run" + hex.EncodeToString(b[:])
}

// The lock: one snapshot, restore or prune of a project at a time across
// processes. The gen file changes on every prune, which tells a process
// holding the index in memory to read it again.

// lockBoth takes the process's mutex and then the project's lock, and
// returns what releases both.
func (c *Checkpoints) lockBoth() (unlock func(), err error) {
	c.mu.Lock()
	unlockFile, err := c.lock()
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	return func() {
		unlockFile()
		c.mu.Unlock()
	}, nil
}

func (c *Checkpoints) lock() (unlock func(), err error) {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if err := writeProjectFile(c.dir, c.cwd); err != nil {
		return nil, err
	}
	f, err := lockCheckpointDir(c.dir)
	if err != nil {
		return nil, err
	}
	if gen := readGen(c.dir); gen != c.indexGen && c.index != nil {
		// A prune ran: objects may be gone that the caches think are there.
		c.index, c.known = nil, map[string]bool{}
	}
	c.trees = map[string][]ckEntry{}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

func lockCheckpointDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("checkpoint: lock %s: %w", f.Name(), err)
	}
	return f, nil
}

func readGen(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "gen"))
	return string(b)
}

// writeProjectFile notes which directory a project's store is for, once.
func writeProjectFile(dir, cwd string) error {
	path := filepath.Join(dir, "project.json")
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	b, _ := json.Marshal(struct {
		Cwd string `json:"cwd"`
	}{cwd})
	if err := storeWrite(path, append(b, '\n'), true); err != nil {
		return fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	return nil
}

// Objects.

func isObjectHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if !(h[i] >= '0' && h[i] <= '9' || h[i] >= 'a' && h[i] <= 'f') {
			return false
		}
	}
	return true
}

func (c *Checkpoints) objectPath(hash string) string {
	return filepath.Join(c.dir, "objects", hash[:2], hash[2:])
}

// putObject stores data (a tree or a symlink target) and returns its hash.
func (c *Checkpoints) putObject(data []byte) (string, error) {
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	if c.known[hash] {
		return hash, nil
	}
	path := c.objectPath(hash)
	if _, err := os.Stat(path); err == nil {
		c.known[hash] = true
		return hash, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("checkpoint: %w", err)
	}
	if err := storeWrite(path, data, false); err != nil {
		return "", fmt.Errorf("checkpoint: store object: %w", err)
	}
	c.known[hash] = true
	return hash, nil
}

// putFile stores the bytes of an open file, at most limit of them, and
// returns their hash; over is set (and nothing stored) when there were
// more.
func (c *Checkpoints) putFile(f *os.File, limit int64) (hash string, over bool, err error) {
	objects := filepath.Join(c.dir, "objects")
	if err := os.MkdirAll(objects, 0o700); err != nil {
		return "", false, fmt.Errorf("checkpoint: %w", err)
	}
	tmp, err := os.CreateTemp(objects, ".tmp-*")
	if err != nil {
		return "", false, fmt.Errorf("checkpoint: %w", err)
	}
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(f, limit+1))
	if err != nil {
		return "", false, fmt.Errorf("checkpoint: read %s: %w", f.Name(), err)
	}
	if n > limit {
		return "", true, nil
	}
	hash = hex.EncodeToString(h.Sum(nil))
	if c.known[hash] {
		return hash, false, nil
	}
	path := c.objectPath(hash)
	if _, err := os.Stat(path); err == nil {
		c.known[hash] = true
		return hash, false, nil
	}
	if err := tmp.Close(); err != nil {
		return "", false, fmt.Errorf("checkpoint: store object: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", false, fmt.Errorf("checkpoint: store object: %w", err)
	}
	tmp = nil
	c.known[hash] = true
	return hash, false, nil
}

// readObject reads an object and checks it against its name.
func (c *Checkpoints) readObject(hash string) ([]byte, error) {
	path := c.objectPath(hash)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &ckDamaged{path, "the object is missing"}
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint object %s: %w", path, err)
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != hash {
		return nil, &ckDamaged{path, "the object does not match its hash"}
	}
	return b, nil
}

// verifyObject reads a file's object through and checks it.
func (c *Checkpoints) verifyObject(hash string) error {
	path := c.objectPath(hash)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return &ckDamaged{path, "the object is missing"}
	}
	if err != nil {
		return fmt.Errorf("read checkpoint object %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("read checkpoint object %s: %w", path, err)
	}
	if hex.EncodeToString(h.Sum(nil)) != hash {
		return &ckDamaged{path, "the object does not match its hash"}
	}
	return nil
}

// Trees. A tree object is one directory:
//
//	zot-tree 1
//	<kind> <mode, octal> <hash or -> <name, Go-quoted>
//
// one line per entry, sorted by name. Kinds: f a file, l a symlink (the
// hash is of its target), d a directory (the hash is of its tree), e
// excluded — there, not recorded (ignored, too big, a cache, a socket).

const treeHeader = "zot-tree 1\n"

type ckEntry struct {
	Name string
	Kind byte
	Mode uint32 // permission bits with setuid, setgid, sticky
	Hash string // "" for e
}

const (
	kindFile     = 'f'
	kindLink     = 'l'
	kindDir      = 'd'
	kindExcluded = 'e'
)

func encodeTree(entries []ckEntry) []byte {
	// Appended by hand, not with fmt: every checkpoint encodes every
	// directory of the project again (a quarter of a snapshot's time).
	b := make([]byte, 0, len(treeHeader)+len(entries)*(64+40))
	b = append(b, treeHeader...)
	for _, e := range entries {
		h := e.Hash
		if h == "" {
			h = "-"
		}
		b = append(b, e.Kind, ' ')
		b = strconv.AppendUint(b, uint64(e.Mode), 8)
		b = append(b, ' ')
		b = append(b, h...)
		b = append(b, ' ')
		b = strconv.AppendQuote(b, e.Name)
		b = append(b, '\n')
	}
	return b
}

// tree reads a tree object (cached), refusing one that does not parse:
// a name that could leave its directory is damage, not data.
func (c *Checkpoints) tree(hash string) ([]ckEntry, error) {
	if hash == "" {
		return nil, nil
	}
	if t, ok := c.trees[hash]; ok {
		return t, nil
	}
	b, err := c.readObject(hash)
	if err != nil {
		return nil, err
	}
	bad := func(why string) error { return &ckDamaged{c.objectPath(hash), why} }
	rest, ok := strings.CutPrefix(string(b), treeHeader)
	if !ok {
		return nil, bad("not a tree")
	}
	var entries []ckEntry
	for _, line := range strings.Split(strings.TrimSuffix(rest, "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, " ", 4)
		if len(f) != 4 || len(f[0]) != 1 {
			return nil, bad(fmt.Sprintf("bad tree line %q", line))
		}
		mode, err := strconv.ParseUint(f[1], 8, 32)
		name, qerr := strconv.Unquote(f[3])
		e := ckEntry{Name: name, Kind: f[0][0], Mode: uint32(mode)}
		if f[2] != "-" {
			e.Hash = f[2]
		}
		switch {
		case err != nil || qerr != nil:
			return nil, bad(fmt.Sprintf("bad tree line %q", line))
		case name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00"):
			return nil, bad(fmt.Sprintf("entry name %q", name))
		case e.Kind == kindExcluded && e.Hash != "":
			return nil, bad(fmt.Sprintf("excluded entry %q has a hash", name))
		case (e.Kind == kindFile || e.Kind == kindLink || e.Kind == kindDir) && !isObjectHash(e.Hash):
			return nil, bad(fmt.Sprintf("entry %q has no hash", name))
		case e.Kind != kindFile && e.Kind != kindLink && e.Kind != kindDir && e.Kind != kindExcluded:
			return nil, bad(fmt.Sprintf("entry %q has unknown kind %q", name, e.Kind))
		case len(entries) > 0 && entries[len(entries)-1].Name >= name:
			return nil, bad("entries out of order")
		}
		entries = append(entries, e)
	}
	c.trees[hash] = entries
	return entries, nil
}

// lookup finds the entry at rel (slash-separated) beneath a root tree:
// found is false when there is none. An excluded directory on the way
// answers for everything beneath it.
func (c *Checkpoints) lookup(root, rel string) (e ckEntry, found bool, err error) {
	hash := root
	parts := strings.Split(rel, "/")
	for i, name := range parts {
		entries, err := c.tree(hash)
		if err != nil {
			return e, false, err
		}
		j := sort.Search(len(entries), func(k int) bool { return entries[k].Name >= name })
		if j == len(entries) || entries[j].Name != name {
			return e, false, nil
		}
		e = entries[j]
		if i == len(parts)-1 || e.Kind != kindDir {
			if i < len(parts)-1 && e.Kind != kindExcluded {
				return ckEntry{}, false, nil // a file where a directory would be
			}
			return e, true, nil
		}
		hash = e.Hash
	}
	return e, true, nil
}

// diffPaths calls changed for each file, link or excluded entry that
// differs between two trees (either may be ""), in order.
func (c *Checkpoints) diffPaths(a, b, prefix string, changed func(rel string)) error {
	return c.pairEntries(a, b, func(x, y *ckEntry, name string) error {
		rel := prefix + name
		sub := func(e *ckEntry) string {
			if e != nil && e.Kind == kindDir {
				return e.Hash
			}
			return ""
		}
		if sub(x) != "" || sub(y) != "" {
			if err := c.diffPaths(sub(x), sub(y), rel+"/", changed); err != nil {
				return err
			}
		}
		leaf := func(e *ckEntry) *ckEntry {
			if e != nil && e.Kind != kindDir {
				return e
			}
			return nil
		}
		if lx, ly := leaf(x), leaf(y); lx != nil || ly != nil {
			if lx == nil || ly == nil || *lx != *ly {
				changed(rel)
			}
		}
		return nil
	})
}

// pairEntries walks two trees (either may be "") side by side in name
// order and calls each with the entries of a name that differ between
// them: x from a, y from b, either nil where its tree has none.
func (c *Checkpoints) pairEntries(a, b string, each func(x, y *ckEntry, name string) error) error {
	if a == b {
		return nil
	}
	ea, err := c.tree(a)
	if err != nil {
		return err
	}
	eb, err := c.tree(b)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var x, y *ckEntry
		switch {
		case j == len(eb) || i < len(ea) && ea[i].Name < eb[j].Name:
			x = &ea[i]
			i++
		case i == len(ea) || eb[j].Name < ea[i].Name:
			y = &eb[j]
			j++
		default:
			x, y = &ea[i], &eb[j]
			i++
			j++
		}
		if x != nil && y != nil && *x == *y {
			continue
		}
		name := ""
		if x != nil {
			name = x.Name
		} else {
			name = y.Name
		}
		if err := each(x, y, name); err != nil {
			return err
		}
	}
	return nil
}

// pathWithin says whether path is dir or beneath it; both are clean and
// absolute.
func pathWithin(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// cutRunes cuts s to n runes.
func cutRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
