package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// The audit log: one JSON line per tool call in $ZOT_HOME/logs/audit.jsonl
// saying what the model asked for, what ran instead when a gate rewrote it,
// who decided what, and how it ended. The file is append-only and mode
// 0600; arguments are cut at auditMaxArgs so a line stays small.
//
// A line is written whole or not at all. Every append holds an exclusive
// flock on the file, so lines from concurrent goroutines and zot processes
// never interleave and the one appending owns the end of the file: a write
// that fails halfway (a full disk) is cut off again. A kill -9 in the
// middle of the write(2) can still leave part of a line; the next append
// finds it, since the file does not end in a newline, and puts in its
// place a "torn" record that keeps its text, so the next line is never
// glued onto it and every line stays JSON.

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
	// Torn is a line a crash cut off, which this record (outcome "torn")
	// replaced.
	Torn *auditTorn `json:"torn,omitempty"`
}

// auditTorn is what was left of a cut-off line: its size and hash, and its
// text (cut at auditMaxArgs) as a string, since it is not JSON.
type auditTorn struct {
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
	Text   string `json:"text"`
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
	// Repaired, when set, is told of a cut-off line an append found and
	// replaced: a zot killed while writing it, or a full disk.
	Repaired func(msg string)

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

// append writes one line whole, under the file's lock, after a repair
// of what a crash left at its end.
func (l *AuditLog) append(line []byte) error {
	f, err := openUnpolled(l.Path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(l.Path), 0o700); err == nil {
			f, err = openUnpolled(l.Path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
		}
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", l.Path, err)
	}
	// A file made by hand or by an older zot may be readable by others:
	// tool arguments can be private, so tighten it once per process.
	l.fixMode.Do(func() {
		if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
			f.Chmod(0o600)
		}
	})
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", l.Path)
	}
	end := st.Size()
	torn, at, err := auditTail(f, end)
	if err != nil {
		return fmt.Errorf("read the end of %s: %w", l.Path, err)
	}
	switch {
	case torn != nil && at == end:
		line = append(append([]byte{'\n'}, l.tornRecord(torn)...), line...)
	case torn != nil:
		line = append(l.tornRecord(torn), line...)
		if err := f.Truncate(at); err != nil {
			return fmt.Errorf("repair %s: %w", l.Path, err)
		}
	}
	if _, err := f.Write(line); err != nil {
		// Ours is the end of the file while the lock is held: cut off
		// what got in, and put a torn line back as it was.
		if f.Truncate(at) == nil && torn != nil && at < end {
			f.Write(torn)
		}
		return fmt.Errorf("append to %s: %w", l.Path, err)
	}
	if torn != nil && l.Repaired != nil {
		l.Repaired(fmt.Sprintf("the last line of %s was cut off (%d bytes: a zot killed while writing it, or a full disk); it is kept as a \"torn\" record", l.Path, len(torn)))
	}
	return nil
}

// auditMaxTail bounds how far back a cut-off line is looked for: far
// beyond any line zot writes.
const auditMaxTail = 1 << 20

// auditTail finds a cut-off last line: the bytes after the last newline
// of a file of size end, and where they start. A file ending in a newline
// (or empty) has none, and at is end.
func auditTail(f *os.File, end int64) (torn []byte, at int64, err error) {
	if end == 0 {
		return nil, 0, nil
	}
	last := []byte{0}
	if _, err := f.ReadAt(last, end-1); err != nil {
		return nil, end, err
	}
	if last[0] == '\n' {
		return nil, end, nil
	}
	start := max(0, end-auditMaxTail)
	buf := make([]byte, end-start)
	if _, err := f.ReadAt(buf, start); err != nil {
		return nil, end, err
	}
	i := bytes.LastIndexByte(buf, '\n')
	if i < 0 && start > 0 {
		// A line longer than any zot writes: not cut, only ended.
		return buf, end, nil
	}
	return buf[i+1:], start + int64(i+1), nil
}

// tornRecord is the line that takes the place of a cut-off one.
func (l *AuditLog) tornRecord(torn []byte) []byte {
	sum := sha256.Sum256(torn)
	e := auditEntry{
		Time:      time.Now().UTC().Format(time.RFC3339Nano),
		PID:       os.Getpid(),
		Cwd:       l.Cwd,
		Decisions: []GateNote{},
		Outcome:   "torn",
		Reason:    "a line cut off by a crash (a zot killed while writing it) or a full disk, found and replaced by the next append",
		Torn:      &auditTorn{Bytes: len(torn), SHA256: hex.EncodeToString(sum[:]), Text: truncate(string(torn), auditMaxArgs)},
	}
	b, _ := json.Marshal(e)
	return append(b, '\n')
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
