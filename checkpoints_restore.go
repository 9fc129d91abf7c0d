package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Restoring a checkpoint makes each directory it covered what it was
// before the checkpoint's call: files changed since get their bytes and
// mode back, files deleted come back, files created are removed. What was
// excluded then or is excluded now (ignored, too big, a cache) is left
// alone, so a restore never removes a file it never recorded.
//
// Before anything is written the restore takes a checkpoint of its own
// (the current state, so the restore can be undone), checks every object
// it will use against its hash, and looks for files someone else changed
// after the checkpoint: a file whose state differs across a gap zot did
// not account for — between two of its calls, after zot stopped during a
// call, or since the last call — is a conflict, and without force nothing
// is restored.

// ckRestoreOptions say how to restore.
type ckRestoreOptions struct {
	Force bool     // overwrite conflicting files
	Keep  []string // leave these paths (as listed) as they are
	// Session and SessionPath own the restore's own checkpoint.
	Session, SessionPath string
}

// ckRestoreResult is what a restore did, or, with conflicts, would do.
type ckRestoreResult struct {
	Target    *ckRecord
	Written   []string // restored or brought back
	Removed   []string
	Left      []string // not restored: not recorded then or not now
	Conflicts []ckConflict
	Errors    []string
	Record    string // the restore's own checkpoint, which undoes it
}

// ckConflict is a file someone else changed after the checkpoint.
type ckConflict struct {
	Path string
	Why  string
}

// errCheckpointConflict is returned with a result naming the conflicts.
var errCheckpointConflict = errors.New("files changed after the checkpoint")

// Restore brings back the state before checkpoint id.
func (c *Checkpoints) Restore(id string, opt ckRestoreOptions) (*ckRestoreResult, error) {
	unlock, err := c.lockBoth()
	if err != nil {
		return nil, err
	}
	defer unlock()
	target, recs, err := c.findRecord(id)
	if err != nil {
		return nil, err
	}
	return c.restoreLocked(target, recs, opt)
}

func (c *Checkpoints) restoreLocked(target *ckRecord, recs ckSessionRecords, opt ckRestoreOptions) (*ckRestoreResult, error) {
	res := &ckRestoreResult{Target: target}
	if opt.Session == "" {
		opt.Session, opt.SessionPath = target.Session, target.SessionPath
	}
	if err := c.loadIndex(); err != nil {
		return nil, err
	}
	// The state now, recorded: the restore's own "before".
	rec := &ckRecord{Version: checkpointVersion, Session: opt.Session, SessionPath: opt.SessionPath, Kind: ckKindRestore,
		Time: c.now().UTC(), Target: target.ID, Prompt: target.Prompt, PromptTime: target.PromptTime}
	var plans []*ckPlan
	for _, r := range target.Roots {
		if r.Before == "" {
			continue
		}
		now, note, err := c.snapshotRoot(r.Path)
		if err != nil {
			return nil, err
		}
		if note != "" {
			return nil, fmt.Errorf("cannot restore %s: %s", r.Path, note)
		}
		rec.Roots = append(rec.Roots, ckRoot{Path: r.Path, Before: now})
		p := &ckPlan{c: c, root: r.Path, display: c.displayPrefix(r.Path)}
		if err := p.merge(r.Before, now, ""); err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	if len(plans) == 0 {
		return nil, fmt.Errorf("checkpoint %s recorded no files (%s)", target.ID, strings.Join(target.Notes, "; "))
	}
	if err := c.saveIndex(); err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, k := range opt.Keep {
		keep[k] = true
	}
	for _, p := range plans {
		p.drop(keep)
		res.Left = append(res.Left, p.left...)
		if !opt.Force {
			cs, err := c.conflicts(target, recs.Records, p, rec)
			if err != nil {
				return nil, err
			}
			res.Conflicts = append(res.Conflicts, cs...)
		}
	}
	if len(res.Conflicts) > 0 {
		return res, errCheckpointConflict
	}
	// Every object the restore will write from must read back as stored.
	for _, p := range plans {
		for _, a := range p.actions {
			if a.op == opWrite {
				if err := c.verifyObject(a.e.Hash); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := c.saveNew(rec); err != nil {
		return nil, err
	}
	res.Record = rec.ID
	for _, p := range plans {
		p.apply(res)
	}
	if err := c.snapshotInto(rec, true); err != nil {
		return res, err
	}
	rec.Done = true
	c.noteChanges(rec)
	return res, c.save(rec)
}

// displayPrefix is how a root's paths are shown: relative in the project,
// absolute elsewhere.
func (c *Checkpoints) displayPrefix(root string) string {
	if root == c.cwd {
		return ""
	}
	return root + string(filepath.Separator)
}

// Plans.

type ckOp int

const (
	opRemove ckOp = iota // a file or symlink
	opRmdir
	opMkdir
	opWrite // a file or symlink
	opChmod // a directory
)

type ckAction struct {
	op  ckOp
	rel string
	e   ckEntry // what to write, make or chmod to
	// soft: a directory that may hold files zot does not record; when it
	// cannot be removed it is left, not an error.
	soft bool
}

// ckPlan is what restoring one root takes.
type ckPlan struct {
	c       *Checkpoints
	root    string
	display string
	actions []ckAction
	left    []string
}

// merge plans the changes that turn tree now into tree want.
func (p *ckPlan) merge(want, now, prefix string) error {
	return p.c.pairEntries(want, now, func(x, y *ckEntry, name string) error {
		rel := prefix + name
		if y != nil && y.Kind == kindExcluded && x != nil && (x.Kind == kindFile || x.Kind == kindLink) {
			// Not recorded now (ignored since, say): record it now, so that
			// it can be told apart and brought back by an undo.
			if e, ok := p.c.recordOne(p.root, rel); ok {
				y = &e
				if *x == *y {
					return nil
				}
			}
		}
		switch {
		case x != nil && x.Kind == kindExcluded || y != nil && y.Kind == kindExcluded:
			if x == nil || y == nil || x.Kind != y.Kind {
				p.left = append(p.left, p.display+rel)
			}
		case x == nil:
			if err := p.removeAll(*y, rel); err != nil {
				return err
			}
		case y == nil:
			if err := p.create(*x, rel); err != nil {
				return err
			}
		case x.Kind == kindDir && y.Kind == kindDir:
			if err := p.merge(x.Hash, y.Hash, rel+"/"); err != nil {
				return err
			}
			if x.Mode != y.Mode {
				p.actions = append(p.actions, ckAction{op: opChmod, rel: rel, e: *x})
			}
		case x.Kind == kindDir:
			p.actions = append(p.actions, ckAction{op: opRemove, rel: rel})
			if err := p.create(*x, rel); err != nil {
				return err
			}
		case y.Kind == kindDir:
			if err := p.removeAll(*y, rel); err != nil {
				return err
			}
			p.actions = append(p.actions, ckAction{op: opWrite, rel: rel, e: *x})
		default:
			p.actions = append(p.actions, ckAction{op: opWrite, rel: rel, e: *x})
		}
		return nil
	})
}

// removeAll plans the removal of what is at rel now.
func (p *ckPlan) removeAll(e ckEntry, rel string) error {
	if e.Kind != kindDir {
		p.actions = append(p.actions, ckAction{op: opRemove, rel: rel})
		return nil
	}
	entries, err := p.c.tree(e.Hash)
	if err != nil {
		return err
	}
	soft := false
	for _, child := range entries {
		if child.Kind == kindExcluded {
			soft = true
			continue
		}
		if err := p.removeAll(child, rel+"/"+child.Name); err != nil {
			return err
		}
	}
	p.actions = append(p.actions, ckAction{op: opRmdir, rel: rel, soft: soft})
	return nil
}

// create plans bringing back e at rel.
func (p *ckPlan) create(e ckEntry, rel string) error {
	switch e.Kind {
	case kindExcluded:
		return nil
	case kindFile, kindLink:
		p.actions = append(p.actions, ckAction{op: opWrite, rel: rel, e: e})
		return nil
	}
	p.actions = append(p.actions, ckAction{op: opMkdir, rel: rel, e: e}, ckAction{op: opChmod, rel: rel, e: e})
	entries, err := p.c.tree(e.Hash)
	if err != nil {
		return err
	}
	for _, child := range entries {
		if err := p.create(child, rel+"/"+child.Name); err != nil {
			return err
		}
	}
	return nil
}

// drop leaves out the actions on the paths the user keeps.
func (p *ckPlan) drop(keep map[string]bool) {
	if len(keep) == 0 {
		return
	}
	kept := p.actions[:0]
	for _, a := range p.actions {
		if (a.op == opWrite || a.op == opRemove) && keep[p.display+a.rel] {
			continue
		}
		kept = append(kept, a)
	}
	p.actions = kept
}

// leaves are the files and symlinks the plan writes or removes.
func (p *ckPlan) leaves() []string {
	var out []string
	for _, a := range p.actions {
		if a.op == opWrite || a.op == opRemove {
			out = append(out, a.rel)
		}
	}
	return out
}

// recordOne records one file the last snapshot left out, as a walk
// would, so that it is in the store before a restore replaces it.
func (c *Checkpoints) recordOne(root, rel string) (ckEntry, bool) {
	abs := filepath.Join(root, filepath.FromSlash(rel))
	fi, err := os.Lstat(abs)
	if err != nil {
		return ckEntry{}, false
	}
	w := &ckWalk{c: c, root: root, start: c.now().UnixNano(), seen: map[string]bool{}}
	e, keep, err := w.entry(abs, rel, fi.Mode().Type(), nil)
	if err != nil || !keep || (e.Kind != kindFile && e.Kind != kindLink) {
		return ckEntry{}, false
	}
	return e, true
}

// conflicts finds the files of plan that someone else changed after the
// target checkpoint, reading the session's checkpoints from the target
// on. rec holds the state now.
func (c *Checkpoints) conflicts(target *ckRecord, records []*ckRecord, plan *ckPlan, now *ckRecord) ([]ckConflict, error) {
	type point struct {
		tree    string
		own     bool   // the change to the next point is zot's
		restore bool   // ... and a restore's: the bytes are zot's record
		after   bool   // the state after a call
		why     string // what a change to the next point means
	}
	treeOf := func(r *ckRecord, after bool) string {
		for _, root := range r.Roots {
			if root.Path == plan.root {
				if after {
					return root.After
				}
				return root.Before
			}
		}
		return ""
	}
	var points []point
	for _, r := range records {
		before := treeOf(r, false)
		if r.Seq < target.Seq || before == "" {
			continue
		}
		if after := treeOf(r, true); r.Done && after != "" {
			points = append(points, point{tree: before, own: true, restore: r.Kind == ckKindRestore},
				point{tree: after, after: true, why: fmt.Sprintf("changed between checkpoint %s and the next one, by something other than zot", r.ID)})
			continue
		}
		what := r.Tool
		if r.Kind == ckKindRestore {
			what = "a restore"
		}
		points = append(points, point{tree: before, why: fmt.Sprintf("zot stopped during the call of checkpoint %s (%s) before it recorded what the call changed, so it cannot tell who changed it", r.ID, what)})
	}
	if n := len(points); n > 0 && points[n-1].after {
		points[n-1].why = "changed since zot last recorded it, by something other than zot"
	}
	points = append(points, point{tree: treeOf(now, false)})
	// A change someone else made is at stake while it is in the file: a
	// call of zot's that changed the file after it built on it, but a
	// restore replaced it with bytes of zot's record.
	var out []ckConflict
	for _, rel := range plan.leaves() {
		at := ""
		for i := 0; i+1 < len(points); i++ {
			a, aok, err := c.lookup(points[i].tree, rel)
			if err != nil {
				at = err.Error()
				break
			}
			b, bok, err := c.lookup(points[i+1].tree, rel)
			if err != nil {
				at = err.Error()
				break
			}
			switch {
			case aok == bok && a == b:
			case points[i].restore:
				at = ""
			case !points[i].own:
				at = points[i].why
			}
		}
		if at != "" {
			out = append(out, ckConflict{plan.display + rel, at})
		}
	}
	return out, nil
}

// apply carries the plan out in an order that works: removals first
// (files, then directories deepest first), then directories made, then
// files written, then directory modes (deepest first, so that a read-only
// directory is made so after its files are in).
func (p *ckPlan) apply(res *ckRestoreResult) {
	root, err := openBeneath(p.root)
	if err != nil {
		res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", p.root, err))
		return
	}
	defer root.close()
	depth := func(a ckAction) int { return strings.Count(a.rel, "/") }
	byOp := func(op ckOp, deepestFirst bool) []ckAction {
		var out []ckAction
		for _, a := range p.actions {
			if a.op == op {
				out = append(out, a)
			}
		}
		sort.SliceStable(out, func(i, j int) bool {
			if deepestFirst {
				return depth(out[i]) > depth(out[j])
			}
			return depth(out[i]) < depth(out[j])
		})
		return out
	}
	fail := func(a ckAction, err error) {
		res.Errors = append(res.Errors, fmt.Sprintf("%s%s: %v", p.display, a.rel, err))
	}
	for _, a := range byOp(opRemove, true) {
		if err := root.remove(a.rel); err != nil && !errors.Is(err, os.ErrNotExist) {
			fail(a, err)
			continue
		}
		res.Removed = append(res.Removed, p.display+a.rel)
	}
	for _, a := range byOp(opRmdir, true) {
		if err := root.removeDir(a.rel); err != nil && !errors.Is(err, os.ErrNotExist) {
			// Files zot does not record (or that the user kept) are in it.
			if a.soft || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
				res.Left = append(res.Left, p.display+a.rel+"/")
				continue
			}
			fail(a, err)
		}
	}
	for _, a := range byOp(opMkdir, false) {
		if err := root.mkdir(a.rel); err != nil && !errors.Is(err, os.ErrExist) {
			fail(a, err)
		}
	}
	for _, a := range byOp(opWrite, false) {
		var err error
		if a.e.Kind == kindLink {
			var target []byte
			if target, err = p.c.readObject(a.e.Hash); err == nil {
				err = root.symlink(a.rel, string(target))
			}
		} else {
			err = p.writeFile(root, a)
		}
		if err != nil {
			fail(a, err)
			continue
		}
		res.Written = append(res.Written, p.display+a.rel)
	}
	for _, a := range byOp(opChmod, true) {
		if err := root.chmodDir(a.rel, a.e.Mode); err != nil {
			fail(a, err)
		}
	}
}

// writeFile writes a file from its object through a temp file beside it,
// checking the bytes against the hash on the way: a mismatch leaves the
// file as it was.
func (p *ckPlan) writeFile(root *beneath, a ckAction) error {
	src, err := os.Open(p.c.objectPath(a.e.Hash))
	if err != nil {
		return err
	}
	defer src.Close()
	h := sha256.New()
	return root.writeFile(a.rel, modeFromUnix(a.e.Mode), func(w io.Writer) error {
		if _, err := io.Copy(io.MultiWriter(w, h), src); err != nil {
			return err
		}
		if hex.EncodeToString(h.Sum(nil)) != a.e.Hash {
			return &ckDamaged{src.Name(), "the object changed while it was restored"}
		}
		return nil
	})
}

// Undo and rewind points.

// undoTarget is the checkpoint /undo restores: the first of the latest
// prompt whose calls changed files and that no restore undid yet. A
// restore stands for everything from its target on, so undoing again goes
// one prompt further back.
func undoTarget(records []*ckRecord) *ckRecord {
	bySeq := map[string]int{}
	for i, r := range records {
		bySeq[r.ID] = i
	}
	for i := len(records) - 1; i >= 0; {
		r := records[i]
		if r.Kind == ckKindRestore {
			if t, ok := bySeq[r.Target]; ok && t < i {
				i = t - 1
			} else {
				i--
			}
			continue
		}
		first, changed := i, r.changedAnything()
		for first > 0 && records[first-1].Kind == ckKindStep && samePrompt(records[first-1], r) {
			first--
			changed = changed || records[first].changedAnything()
		}
		if changed {
			return records[first]
		}
		i = first - 1
	}
	return nil
}

func (r *ckRecord) changedAnything() bool { return !r.Done || len(r.Changed) > 0 }

func samePrompt(a, b *ckRecord) bool {
	if a.PromptTime == nil || b.PromptTime == nil {
		return a.PromptTime == nil && b.PromptTime == nil && a.Prompt == b.Prompt
	}
	return a.PromptTime.Equal(*b.PromptTime)
}

// ckRewind is what a rewind of a live conversation did.
type ckRewind struct {
	Target *ckRecord
	Files  *ckRestoreResult // nil when the files were not asked for
	Kept   int              // messages kept; -1 when the conversation was not asked for
	Prompt string           // the prompt the conversation went back to before
}

// RewindLive restores the files of checkpoint id — the /undo target of
// session when id is "" — and, with conversation, takes the agent's
// transcript back to before the checkpoint's prompt. A conflict or a
// prompt no longer in the transcript changes nothing.
func (c *Checkpoints) RewindLive(agent *Agent, session, sessionPath, id string, files, conversation bool, opt ckRestoreOptions) (*ckRewind, error) {
	unlock, err := c.lockBoth()
	if err != nil {
		return nil, err
	}
	defer unlock()
	var target *ckRecord
	var recs ckSessionRecords
	if id == "" {
		if recs, err = c.sessionRecords(session); err != nil {
			return nil, err
		}
		if target = undoTarget(recs.Records); target == nil {
			if len(recs.Damaged) > 0 {
				return nil, recs.Damaged[0]
			}
			return nil, errors.New("nothing to undo: no call of this session changed a file zot records")
		}
	} else if target, recs, err = c.findRecord(id); err != nil {
		return nil, err
	}
	out := &ckRewind{Target: target, Kept: -1}
	at := -1
	if conversation {
		if target.Session != session {
			return nil, fmt.Errorf("checkpoint %s belongs to another session (%s), not to this conversation; restore its files only", target.ID, target.Session)
		}
		msgs := agent.Messages()
		if at = promptIndex(msgs, target); at < 0 {
			return nil, fmt.Errorf("the prompt of checkpoint %s (%s) is no longer in the conversation (compacted or cleared since); restore its files only", target.ID, quotedPrompt(target.Prompt))
		}
		out.Prompt, _ = splitPrompt(msgs[at])
	}
	if files {
		opt.Session, opt.SessionPath = session, sessionPath
		res, err := c.restoreLocked(target, recs, opt)
		out.Files = res
		if err != nil {
			return out, err
		}
	}
	if conversation {
		if err := agent.Rewind(at); err != nil {
			return out, err
		}
		out.Kept = at
	}
	return out, nil
}

// ckPromptPoint is a prompt of a session with checkpoints: where to go
// back to for it, and the files its calls changed.
type ckPromptPoint struct {
	Prompt     string
	PromptTime *time.Time
	Checkpoint string // the first checkpoint of the prompt
	Files      []string
	More       int
}

// PromptPoints lists the prompts of a session whose calls have
// checkpoints, oldest first.
func (c *Checkpoints) PromptPoints(session string) ([]ckPromptPoint, error) {
	recs, err := c.sessionRecords(session)
	if err != nil {
		return nil, err
	}
	var out []ckPromptPoint
	seen := map[string]bool{}
	for i, r := range recs.Records {
		if r.Kind != ckKindStep {
			continue
		}
		if i == 0 || recs.Records[i-1].Kind != ckKindStep || !samePrompt(recs.Records[i-1], r) {
			out = append(out, ckPromptPoint{Prompt: r.Prompt, PromptTime: r.PromptTime, Checkpoint: r.ID})
			seen = map[string]bool{}
		}
		pt := &out[len(out)-1]
		for _, f := range r.Changed {
			if !seen[f] {
				seen[f] = true
				pt.Files = append(pt.Files, f)
			}
		}
		pt.More += r.MoreChanged
	}
	return out, nil
}
