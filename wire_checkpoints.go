package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Checkpoints in every mode: armed once in newSetup, and what the TUI and
// the rpc server are given to list and restore them.

// armCheckpoints makes the agent record the covered directories before and
// after each call of a tool that may change files: the project and, with
// --sandbox, the other directories commands may write (not the temp
// directory). Every mode gets them; a bad setting is a note and the
// defaults stand.
func (s *setup) armCheckpoints() {
	set, err := LoadCheckpointSettings(s.home)
	if err != nil {
		s.notes = append(s.notes, fmt.Sprintf("%v (checkpoints use their defaults)", err))
	}
	if !set.Enabled {
		return
	}
	var extra []string
	tmp, _ := filepath.EvalSymlinks(os.TempDir())
	realCwd, _ := filepath.EvalSymlinks(s.cwd)
	for _, d := range s.sandbox.WritableDirs() {
		if d != tmp && d != realCwd {
			extra = append(extra, d)
		}
	}
	ck := OpenCheckpoints(s.home, s.cwd, extra, set)
	ck.Log = func(format string, args ...any) { s.agent.logf(format, args...) }
	s.checkpoints, s.runID = ck, newRunID()
	s.agent.AroundToolRun = ck.AroundToolRun(s.agent, s.checkpointSession, func(call ToolCall) bool {
		// Every tool but the built-in read and skill may change files,
		// whatever an extension's or MCP server's tool claims; so may
		// every bash line but one that runs a program that only reads.
		t, ok := s.agent.Tools.Lookup(call.Name)
		switch t.(type) {
		case readTool, skillTool:
			return false
		case bashTool:
			return !bashLineOnlyReads(call.Args)
		}
		return ok
	})
}

// checkpointSession is the session the checkpoints of this run belong to:
// the session file's id, or the run's own.
func (s *setup) checkpointSession() (id, path string) {
	if s.session != nil {
		return s.session.Meta.ID, s.session.Path
	}
	return s.runID, ""
}

// checkpointHost gives the TUI (/undo, /rewind) and rpc (get_checkpoints,
// rewind) the checkpoints of this run's session.
type checkpointHost struct{ s *setup }

func (s *setup) tuiCheckpoints() tuiCheckpoints {
	if s.checkpoints == nil {
		return nil
	}
	return checkpointHost{s}
}

func (s *setup) rpcCheckpoints() rpcCheckpoints {
	if s.checkpoints == nil {
		return nil
	}
	return checkpointHost{s}
}

func (h checkpointHost) Points() ([]tuiRewindPoint, error) {
	session, _ := h.s.checkpointSession()
	points, err := h.s.checkpoints.PromptPoints(session)
	out := make([]tuiRewindPoint, 0, len(points))
	for _, p := range points {
		tp := tuiRewindPoint{Prompt: p.Prompt, Checkpoint: p.Checkpoint, Files: p.Files, More: p.More}
		if p.PromptTime != nil {
			tp.PromptTime = *p.PromptTime
		}
		out = append(out, tp)
	}
	return out, err
}

func (h checkpointHost) Restore(id string, force bool, keep []string) (tuiRestoreResult, error) {
	session, path := h.s.checkpointSession()
	rw, err := h.s.checkpoints.RewindLive(nil, session, path, id, true, false, ckRestoreOptions{Force: force, Keep: keep})
	var r tuiRestoreResult
	if rw != nil {
		r.Checkpoint = rw.Target.ID
		if rw.Target.Kind == ckKindStep {
			r.Prompt = rw.Target.Prompt
		}
		if f := rw.Files; f != nil {
			r.Written, r.Removed, r.Left, r.Errors, r.Undo = f.Written, f.Removed, f.Left, f.Errors, f.Record
			for _, c := range f.Conflicts {
				r.Conflicts = append(r.Conflicts, tuiConflict(c))
			}
		}
	}
	return r, err
}

func (h checkpointHost) Diff() ([]tuiFileDiff, error) {
	session, _ := h.s.checkpointSession()
	diffs, err := h.s.checkpoints.SessionDiff(session)
	out := make([]tuiFileDiff, 0, len(diffs))
	for _, d := range diffs {
		out = append(out, tuiFileDiff(d))
	}
	return out, err
}

func (h checkpointHost) List() ([]json.RawMessage, error) {
	session, _ := h.s.checkpointSession()
	recs, err := h.s.checkpoints.sessionRecords(session)
	for _, d := range recs.Damaged {
		h.s.agent.logf("%v", d)
	}
	var out []json.RawMessage
	for _, r := range recs.Records {
		b, _ := json.Marshal(r.listEntry())
		out = append(out, b)
	}
	return out, err
}

func (h checkpointHost) Rewind(req rpcRequest) (rpcRewindData, error) {
	session, path := h.s.checkpointSession()
	files, conversation := req.Restore != rpcRestoreConversation, req.Restore != rpcRestoreFiles
	rw, err := h.s.checkpoints.RewindLive(h.s.agent, session, path, req.Checkpoint, files, conversation, ckRestoreOptions{Force: req.Force})
	if errors.Is(err, errCheckpointConflict) {
		var names []string
		for _, c := range rw.Files.Conflicts {
			names = append(names, fmt.Sprintf("%s (%s)", c.Path, c.Why))
		}
		return rpcRewindData{}, fmt.Errorf("nothing restored: these files changed after zot recorded them, and restoring would overwrite those changes: %s; send \"force\":true to overwrite them", strings.Join(names, "; "))
	}
	if err != nil {
		return rpcRewindData{}, err
	}
	d := rpcRewindData{Checkpoint: rw.Target.ID, Restored: []string{}, Removed: []string{}, Left: []string{}}
	if f := rw.Files; f != nil {
		d.Restored = append(d.Restored, f.Written...)
		d.Removed = append(d.Removed, f.Removed...)
		d.Left = append(d.Left, f.Left...)
		d.Undo = f.Record
		if len(f.Errors) > 0 {
			return d, fmt.Errorf("the restore is incomplete (%s); rewind to checkpoint %s brings back what was there before it", strings.Join(f.Errors, "; "), f.Record)
		}
	}
	if rw.Kept >= 0 {
		d.Messages = &rw.Kept
	}
	return d, nil
}
