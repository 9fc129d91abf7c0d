package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// zot checkpoints: list a session's checkpoints, restore one (files,
// conversation or both), prune the store.

var checkpointsUsage = commandHelp{
	name:  "zot checkpoints",
	about: "the checkpoints taken before each tool call: list, restore, prune",
	subs: []subcommandHelp{
		{"list", "[SESSION] [--json] [--cwd DIR]", "one checkpoint a line, oldest first, its id the first word", ""},
		{"restore", "ID [--files-only|--conversation-only] [--force] [--cwd DIR]", "bring back the files and the conversation as they were before checkpoint ID",
			`Files someone else changed after the checkpoint (by hand, another program, a
zot that stopped during a call) are not overwritten without --force: the
restore names them and changes nothing. The restore is itself a checkpoint,
whose id it prints: restoring that one undoes it. The conversation goes back
to before the prompt the checkpoint belongs to (its session file gets a
reset row; the session must not be open in another zot).
`},
		{"prune", "", "apply the size limits of config.json to the store now (zot does it once a day)", ""},
		{"help", "[command]", "this text, or a command's", ""},
	},
	notes: `SESSION is a session id (or the start of one), "latest", or a session file, as
for zot sessions; the default is the session with the newest checkpoint in this
directory. Checkpoints are kept in $ZOT_HOME/checkpoints (docs/checkpoints.md).

Flags:
  --cwd DIR   the project directory (default: the current one)
  --json      list: one JSON object per line

Exit status: 0 done, 1 failed or refused (the reason is on stderr), 2 usage error.
`,
}

// ckListEntry is a line of zot checkpoints list --json, and a checkpoint
// of the rpc get_checkpoints.
type ckListEntry struct {
	ID          string     `json:"id"`
	Session     string     `json:"session"`
	Seq         int        `json:"seq"`
	Kind        string     `json:"kind"`
	Time        time.Time  `json:"time"`
	Tool        string     `json:"tool,omitempty"`
	Prompt      string     `json:"prompt,omitempty"`
	PromptTime  *time.Time `json:"prompt_time,omitempty"`
	Target      string     `json:"target,omitempty"`
	Complete    bool       `json:"complete"`
	Changed     []string   `json:"changed"`
	MoreChanged int        `json:"more_changed,omitempty"`
	Roots       []string   `json:"roots"`
	Notes       []string   `json:"notes,omitempty"`
}

func (r *ckRecord) listEntry() ckListEntry {
	e := ckListEntry{ID: r.ID, Session: r.Session, Seq: r.Seq, Kind: r.Kind, Time: r.Time, Tool: r.Tool, Prompt: r.Prompt,
		PromptTime: r.PromptTime, Target: r.Target, Complete: r.Done, Changed: r.Changed, MoreChanged: r.MoreChanged, Notes: r.Notes}
	if e.Changed == nil {
		e.Changed = []string{}
	}
	for _, root := range r.Roots {
		e.Roots = append(e.Roots, root.Path)
	}
	return e
}

// listLine is a checkpoint as zot checkpoints list shows it.
func (r *ckRecord) listLine(now time.Time) string {
	what := fmt.Sprintf("%-8s %s", sessionOneLine(r.Tool, 24), quotedPrompt(r.Prompt))
	if r.Kind == ckKindRestore {
		what = fmt.Sprintf("%-8s to %s", "restore", r.Target)
	}
	changed := "no change"
	switch {
	case !r.Done:
		changed = "(zot stopped during the call: what it changed is not known)"
	case len(r.Changed) > 0:
		var names []string
		for _, c := range r.Changed[:min(len(r.Changed), 5)] {
			names = append(names, sessionOneLine(c, 60))
		}
		more := len(r.Changed) - len(names) + r.MoreChanged
		changed = "changed " + strings.Join(names, ", ")
		if more > 0 {
			changed += fmt.Sprintf(" and %d more", more)
		}
	}
	return fmt.Sprintf("%s  %s  %s  %s", r.ID, r.Time.In(now.Location()).Format("2006-01-02 15:04:05"), what, changed)
}

func quotedPrompt(p string) string {
	if p == "" {
		return "(no prompt)"
	}
	return `"` + sessionOneLine(p, 40) + `"`
}

// runCheckpointsCommand is zot checkpoints.
func runCheckpointsCommand(args []string, stdout, stderr io.Writer) int {
	var asJSON, filesOnly, convOnly, force bool
	words, cwd, ok := commandArgs(&checkpointsUsage, args, map[string]*bool{"--json": &asJSON, "--files-only": &filesOnly, "--conversation-only": &convOnly, "--force": &force}, nil, stderr)
	if !ok {
		return exitUsage
	}
	home := zotHome()
	failed := func(err error) int {
		fmt.Fprintf(stderr, "zot checkpoints: %s\n", sanitize(err.Error()))
		return exitFailure
	}
	set, err := LoadCheckpointSettings(home)
	if err != nil {
		fmt.Fprintf(stderr, "zot checkpoints: %s (using the defaults)\n", sanitize(err.Error()))
	}
	ck := OpenCheckpoints(home, cwd, nil, set)
	switch {
	case len(words) >= 1 && len(words) <= 2 && words[0] == "list" && !filesOnly && !convOnly && !force:
		name := ""
		if len(words) == 2 {
			name = words[1]
		}
		session, err := ck.resolveSession(home, cwd, name)
		if err != nil {
			return failed(err)
		}
		recs, err := ck.sessionRecords(session)
		if err != nil {
			return failed(err)
		}
		for _, d := range recs.Damaged {
			fmt.Fprintf(stderr, "zot checkpoints: %s\n", sanitize(d.Error()))
		}
		now := time.Now()
		for _, r := range recs.Records {
			if asJSON {
				writeJSONLine(stdout, r.listEntry())
			} else {
				fmt.Fprintln(stdout, r.listLine(now))
			}
		}
		return exitOK
	case len(words) == 2 && words[0] == "restore" && !asJSON && !(filesOnly && convOnly):
		return ck.restoreCommand(words[1], filesOnly, convOnly, force, stdout, stderr)
	case len(words) == 1 && words[0] == "prune" && !asJSON && !filesOnly && !convOnly && !force:
		rep, err := PruneCheckpoints(home, set, "")
		for _, p := range rep.Problems {
			fmt.Fprintf(stderr, "zot checkpoints: %s\n", sanitize(p))
		}
		if err != nil {
			return failed(err)
		}
		for _, r := range rep.Removed {
			fmt.Fprintf(stdout, "removed the checkpoints of %s\n", sanitize(r))
		}
		fmt.Fprintf(stdout, "store: %s before, %s now (limits: %s a project, %s in all)\n", sizeString(rep.Before), sizeString(rep.After), sizeString(set.MaxProjectSize), sizeString(set.MaxTotalSize))
		return exitOK
	}
	fmt.Fprint(stderr, checkpointsUsage.text(""))
	return exitUsage
}

// resolveSession finds the checkpoint session a user names: a session of
// the store by id or the start of one, or a session as zot sessions takes
// it; none is the one with the newest checkpoint.
func (c *Checkpoints) resolveSession(home, cwd, name string) (string, error) {
	list, err := c.sessions()
	if err != nil {
		return "", err
	}
	if name == "" {
		if len(list) == 0 {
			return "", fmt.Errorf("no checkpoints for %s yet", cwd)
		}
		return list[len(list)-1].ID, nil
	}
	var found []string
	for _, s := range list {
		if s.ID == name {
			return s.ID, nil
		}
		if strings.HasPrefix(s.ID, name) {
			found = append(found, s.ID)
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	path, err := findSession(home, cwd, name)
	if err != nil {
		return "", err
	}
	info, err := readSessionInfo(path)
	if err != nil {
		return "", fmt.Errorf("read session %s: %w", path, err)
	}
	return info.Meta.ID, nil
}

// restoreCommand is zot checkpoints restore.
func (c *Checkpoints) restoreCommand(id string, filesOnly, convOnly, force bool, stdout, stderr io.Writer) int {
	failed := func(err error) int {
		fmt.Fprintf(stderr, "zot checkpoints: %s\n", sanitize(err.Error()))
		return exitFailure
	}
	rec, _, err := c.findRecord(id)
	if err != nil {
		return failed(err)
	}
	// The conversation is checked first, so that a session in use or a
	// prompt gone leaves the files alone too.
	var sess *Session
	var msgs []Message
	var keep int
	if !filesOnly {
		sess, msgs, keep, err = c.openConversation(rec)
		if err != nil {
			if !convOnly {
				err = fmt.Errorf("%w; --files-only restores the files alone", err)
			}
			return failed(err)
		}
		defer sess.Close()
	}
	if !convOnly {
		res, err := c.Restore(id, ckRestoreOptions{Force: force})
		if errors.Is(err, errCheckpointConflict) {
			fmt.Fprintf(stderr, "zot checkpoints: nothing restored: %d files changed after zot recorded them, and restoring would overwrite those changes (--force does):\n", len(res.Conflicts))
			for _, cf := range res.Conflicts {
				fmt.Fprintf(stderr, "  %s: %s\n", sanitize(cf.Path), sanitize(cf.Why))
			}
			return exitFailure
		}
		if err != nil {
			return failed(err)
		}
		printRestore(stdout, res)
		if len(res.Errors) > 0 {
			for _, e := range res.Errors {
				fmt.Fprintf(stderr, "zot checkpoints: %s\n", sanitize(e))
			}
			fmt.Fprintf(stderr, "zot checkpoints: the restore is incomplete; zot checkpoints restore %s brings back what was there before it\n", res.Record)
			return exitFailure
		}
	}
	if sess != nil && keep < 0 {
		fmt.Fprintf(stdout, "conversation: nothing from the prompt %s on is in %s (restored before?); left as it is\n", quotedPrompt(rec.Prompt), sess.Path)
	} else if sess != nil {
		if err := sess.Reset(msgs[:keep]); err != nil {
			return failed(err)
		}
		fmt.Fprintf(stdout, "conversation: back to before the prompt %s (%d messages kept) in %s\n", quotedPrompt(rec.Prompt), keep, sess.Path)
	}
	return exitOK
}

// openConversation opens the session of rec and finds where its prompt
// starts in the transcript: -1 when nothing from the prompt on is left.
func (c *Checkpoints) openConversation(rec *ckRecord) (*Session, []Message, int, error) {
	path := rec.SessionPath
	if path == "" {
		return nil, nil, 0, fmt.Errorf("checkpoint %s belongs to a run without a session file, so there is no conversation to restore", rec.ID)
	}
	sess, loaded, err := OpenSession(path)
	if err != nil {
		return nil, nil, 0, err
	}
	at := promptIndex(loaded.Messages, rec)
	// A conversation that holds nothing from the prompt on is already where
	// the restore would take it: a restore killed after its rewind is run
	// again, or the conversation was cleared. A compaction since leaves its
	// summary, newer than the prompt, and is refused below.
	if at < 0 && rec.PromptTime != nil && !anyMessageFrom(loaded.Messages, *rec.PromptTime) {
		return sess, loaded.Messages, -1, nil
	}
	if at < 0 {
		sess.Close()
		return nil, nil, 0, fmt.Errorf("the prompt of checkpoint %s (%s) is no longer in the conversation of %s (compacted or cleared since)", rec.ID, quotedPrompt(rec.Prompt), path)
	}
	return sess, loaded.Messages, at, nil
}

// promptIndex is where rec's prompt is in msgs, -1 when it is not there:
// the prompt message is known by its time.
func promptIndex(msgs []Message, rec *ckRecord) int {
	if rec.PromptTime == nil {
		return -1
	}
	for i, m := range msgs {
		if m.isPrompt() && m.Time.Equal(*rec.PromptTime) {
			return i
		}
	}
	return -1
}

func anyMessageFrom(msgs []Message, from time.Time) bool {
	for _, m := range msgs {
		if !m.Time.Before(from) {
			return true
		}
	}
	return false
}

func printRestore(w io.Writer, res *ckRestoreResult) {
	fmt.Fprintf(w, "restored the files of checkpoint %s: %d written, %d removed; checkpoint %s undoes this\n", res.Target.ID, len(res.Written), len(res.Removed), res.Record)
	for _, p := range res.Written {
		fmt.Fprintf(w, "  restored %s\n", sanitize(p))
	}
	for _, p := range res.Removed {
		fmt.Fprintf(w, "  removed  %s\n", sanitize(p))
	}
	for _, p := range res.Left {
		fmt.Fprintf(w, "  left     %s (not recorded then or not now)\n", sanitize(p))
	}
}
