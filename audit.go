package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The audit log: one JSON line per tool call in $ZOT_HOME/logs/audit.jsonl
// saying what the model asked for, what ran instead when a gate rewrote it,
// who decided what, and how it ended. The file is append-only and mode
// 0600. Each line is one write(2) on a file opened O_APPEND, so lines from
// concurrent goroutines and zot processes never interleave; arguments are
// cut at auditMaxArgs so a line stays small.

const (
	auditMaxArgs   = 16 << 10 // bytes of arguments kept per call
	auditMaxReason = 2 << 10  // bytes of a decision's reason or an error kept
)

// AuditStage is the audit log's place among the after-tool stages: last,
// after every stage that may change the result, so it records what the
// model saw.
var AuditStage = Stage{Name: "audit", Order: OrderRecord}

// auditEntry is one line of the audit log.
type auditEntry struct {
	Time    string          `json:"time"`
	Session string          `json:"session,omitempty"`
	PID     int             `json:"pid"`
	Cwd     string          `json:"cwd"`
	Tool    string          `json:"tool"`
	CallID  string          `json:"call_id"`
	Args    json.RawMessage `json:"args"` // as the model sent them
	ArgsCut *auditCut       `json:"args_truncated,omitempty"`
	// Executed are the arguments after a gate rewrote them: what ran, or
	// what a later gate blocked.
	Executed    json.RawMessage `json:"executed,omitempty"`
	ExecutedCut *auditCut       `json:"executed_truncated,omitempty"`
	Decisions   []GateNote      `json:"decisions"`
	Outcome     string          `json:"outcome"` // ran, blocked (a gate said no) or error (it could not run)
	IsError     bool            `json:"is_error,omitempty"`
	ExitCode    *int            `json:"exit_code,omitempty"`
	Reason      string          `json:"reason,omitempty"`  // why it was blocked or could not run
	Sandbox     string          `json:"sandbox,omitempty"` // bash: the mode the command ran in
}

// auditCut describes arguments too long to keep whole: their size and hash,
// so a reviewer can still match them against a session file.
type auditCut struct {
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// AuditLog appends tool calls to one file. It is safe for concurrent use.
type AuditLog struct {
	Path      string
	Cwd       string
	SessionID func() string // may be nil
	Sandbox   string        // the mode bash commands run in

	fixMode sync.Once
}

// Record appends one line for a finished tool call.
func (l *AuditLog) Record(rec *ToolRecord) error {
	e := auditEntry{
		Time:      time.Now().UTC().Format(time.RFC3339Nano),
		PID:       os.Getpid(),
		Cwd:       l.Cwd,
		Tool:      rec.Call.Name,
		CallID:    rec.Call.ID,
		Decisions: []GateNote{},
		Outcome:   "error",
		IsError:   rec.Result.IsError,
		ExitCode:  rec.Result.ExitCode,
	}
	if l.SessionID != nil {
		e.Session = l.SessionID()
	}
	if rec.Call.Name == ToolBash {
		e.Sandbox = l.Sandbox
		if c := rec.Decision.Confine; c != nil {
			e.Sandbox = c.Name // the mode's, or "off" for a run outside
		}
	}
	e.Args, e.ArgsCut = auditArgs(rec.Call.Args)
	if rec.Executed != nil {
		e.Executed, e.ExecutedCut = auditArgs(rec.Executed)
	}
	for _, n := range rec.Decision.Trail {
		n.Reason = truncate(n.Reason, auditMaxReason)
		e.Decisions = append(e.Decisions, n)
	}
	switch {
	case rec.Decision.Block:
		e.Outcome, e.Reason = "blocked", truncate(rec.Decision.Reason, auditMaxReason)
	case rec.Ran:
		e.Outcome = "ran"
	default:
		e.Reason = truncate(Message{Content: rec.Result.Content}.Text(), auditMaxReason)
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode the entry for %s: %w", rec.Call.Name, err)
	}
	return l.append(append(line, '\n'))
}

// append writes one line with one write call.
func (l *AuditLog) append(line []byte) error {
	f, err := os.OpenFile(l.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(l.Path), 0o700); err == nil {
			f, err = os.OpenFile(l.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		}
	}
	if err != nil {
		return err
	}
	defer f.Close()
	// A file made by hand or by an older zot may be readable by others:
	// tool arguments can be private, so tighten it once per process.
	l.fixMode.Do(func() {
		if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
			f.Chmod(0o600)
		}
	})
	if _, err := f.Write(line); err != nil {
		return fmt.Errorf("append to %s: %w", l.Path, err)
	}
	return nil
}

// auditArgs keeps arguments as JSON when they are short, else their first
// auditMaxArgs bytes as a string with a marker, size and hash.
func auditArgs(raw json.RawMessage) (json.RawMessage, *auditCut) {
	args := argsJSON(raw)
	if len(args) <= auditMaxArgs {
		return args, nil
	}
	sum := sha256.Sum256(raw)
	head, _ := json.Marshal(truncate(string(raw), auditMaxArgs) + " [truncated]")
	return head, &auditCut{Bytes: len(raw), SHA256: hex.EncodeToString(sum[:])}
}
