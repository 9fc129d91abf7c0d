package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Sessions that travel and branch: a session exported as one portable file
// and imported into another directory (or machine), the reference zot's
// session files and .zotsession exports converted on import, and the tree
// of a session and its forks. docs/sessions.md describes the formats.

// PortableExt is the name ending of an exported session, as the reference
// zot names its own.
const PortableExt = ".zotsession"

// exportPath is where an export of src goes: dst as given, inside dst
// when it is a directory, or in dir when dst is empty; the file's name is
// the session's own with PortableExt.
func exportPath(src, dst, dir string) string {
	name := strings.TrimSuffix(filepath.Base(src), ".jsonl") + PortableExt
	if dst == "" {
		return filepath.Join(dir, name)
	}
	if st, err := os.Stat(dst); err == nil && st.IsDir() {
		return filepath.Join(dst, name)
	}
	return dst
}

// ExportSession writes the session file src to dst as a portable file: the
// meta row without the working directory (and with the parent named by its
// file name only, which carries no path), every other byte as it is. The
// file is written whole or not at all, and an existing dst is refused.
func ExportSession(src, dst string) error {
	head, rest, err := splitSessionHead(src)
	if err != nil {
		return fmt.Errorf("export %s: %w", src, err)
	}
	defer rest.Close()
	body, err := io.ReadAll(rest)
	if err != nil {
		return fmt.Errorf("export %s: %w", src, err)
	}
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("export to %s: the file exists; choose another name or remove it", dst)
	}
	var out bytes.Buffer
	if err := writeExportHead(&out, head); err != nil {
		return fmt.Errorf("export %s: %w", src, err)
	}
	out.Write(body)
	if err := writeFileAtomic(dst, out.Bytes(), 0o600); err != nil {
		return fmt.Errorf("export to %s: %w", dst, err)
	}
	return nil
}

// ExportSessionTo writes the portable form of src to w (zot sessions
// export -o -).
func ExportSessionTo(src string, w io.Writer) error {
	head, rest, err := splitSessionHead(src)
	if err != nil {
		return fmt.Errorf("export %s: %w", src, err)
	}
	defer rest.Close()
	bw := bufio.NewWriter(w)
	if err := writeExportHead(bw, head); err != nil {
		return fmt.Errorf("export %s: %w", src, err)
	}
	if _, err := io.Copy(bw, rest); err != nil {
		return fmt.Errorf("export %s: %w", src, err)
	}
	return bw.Flush()
}

// splitSessionHead opens a session file of this zot and returns its meta
// row and the rest of the file.
func splitSessionHead(path string) (head []byte, rest io.ReadCloser, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, err = br.ReadBytes('\n')
	if err != nil && len(head) == 0 {
		f.Close()
		return nil, nil, errors.New("the file is empty: nothing to export yet")
	}
	var row sessionRow
	if json.Unmarshal(head, &row) != nil || row.Type != "meta" || row.Version < 1 {
		f.Close()
		return nil, nil, errors.New("not a zot session file (its first line is not a meta row)")
	}
	if row.Version > sessionVersion {
		f.Close()
		return nil, nil, &newerSessionError{path, row.Version}
	}
	return head, struct {
		io.Reader
		io.Closer
	}{br, f}, nil
}

// writeExportHead writes the meta row with cwd emptied and parent reduced
// to its file name; the fields zot does not know are kept.
func writeExportHead(w io.Writer, head []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(head, &fields); err != nil {
		return err
	}
	fields["cwd"] = json.RawMessage(`""`)
	if raw, ok := fields["parent"]; ok {
		var parent string
		json.Unmarshal(raw, &parent)
		fields["parent"], _ = json.Marshal(filepath.Base(parent))
	}
	return writeJSONLine(w, fields)
}

// writeJSONLine writes v as one line of JSON, HTML characters as they are.
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// ImportSession makes the session file src — an export, a session file of
// this zot, or a session file or .zotsession of the reference zot — a new
// session of cwd under home, with a fresh id, and returns its path. Rows
// that cannot be read are skipped, each with a note naming the file and
// line. The new file appears whole or not at all.
func ImportSession(src, home, cwd string) (path string, notes []string, err error) {
	f, err := os.Open(src)
	if err != nil {
		return "", nil, fmt.Errorf("import %s: %w", src, err)
	}
	defer f.Close()
	in := &importReader{src: src, br: bufio.NewReaderSize(f, 1<<20)}
	first, lineNo, err := in.next()
	if err != nil {
		return "", nil, fmt.Errorf("import %s: %w", src, err)
	}
	if first == nil {
		return "", nil, fmt.Errorf("import %s: the file is empty", src)
	}
	var head struct {
		Type    string          `json:"type"`
		Version int             `json:"version"`
		Meta    json.RawMessage `json:"meta"`
	}
	if json.Unmarshal(first, &head) != nil || head.Type != "meta" {
		return "", nil, fmt.Errorf("import %s: not a session file (line %d is not a meta row)", src, lineNo)
	}

	sess := NewSession(home, cwd, "", "")
	var body bytes.Buffer
	if len(head.Meta) > 0 && head.Meta[0] == '{' {
		err = in.convertReference(head.Meta, &sess.Meta, &body)
	} else {
		err = in.copyOwn(first, &sess.Meta, &body)
	}
	if err != nil {
		return "", in.notes, fmt.Errorf("import %s: %w", src, err)
	}
	var out bytes.Buffer
	if err := writeJSONLine(&out, metaRow{"meta", sess.Meta}); err != nil {
		return "", in.notes, fmt.Errorf("import %s: %w", src, err)
	}
	out.Write(body.Bytes())
	// The file must read back as a session before it takes its name.
	if _, err := scanSession(src, bytes.NewReader(out.Bytes())); err != nil {
		return "", in.notes, fmt.Errorf("import %s: %w", src, err)
	}
	if err := os.MkdirAll(filepath.Dir(sess.Path), 0o700); err != nil {
		return "", in.notes, fmt.Errorf("import %s: %w", src, err)
	}
	if err := writeFileAtomic(sess.Path, out.Bytes(), 0o600); err != nil {
		return "", in.notes, fmt.Errorf("import %s: %w", src, err)
	}
	return sess.Path, in.notes, nil
}

// importReader reads the lines of a file being imported and keeps notes on
// what it skipped.
type importReader struct {
	src    string
	br     *bufio.Reader
	lineNo int
	notes  []string
}

// next returns the next line that is not blank, nil at the end.
func (r *importReader) next() ([]byte, int, error) {
	for {
		line, err := r.br.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return nil, r.lineNo, nil
		}
		if err != nil && err != io.EOF {
			return nil, r.lineNo, err
		}
		r.lineNo++
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return line, r.lineNo, nil
		}
	}
}

func (r *importReader) skip(line int, why string) {
	r.notes = append(r.notes, fmt.Sprintf("%s line %d: %s; skipped it", r.src, line, why))
}

// copyOwn copies the rows of a file in this zot's format as they are,
// after checking each the way loading does; meta gets the file's provider,
// model and creation time.
func (r *importReader) copyOwn(first []byte, meta *SessionMeta, out *bytes.Buffer) error {
	var m sessionRow
	json.Unmarshal(first, &m)
	switch {
	case m.Version > sessionVersion:
		return &newerSessionError{r.src, m.Version}
	case m.Version < 1:
		return fmt.Errorf("the meta row has no valid version (%d)", m.Version)
	}
	meta.Provider, meta.Model = m.Provider, m.Model
	if !m.Created.IsZero() {
		meta.Created = m.Created
	}
	for {
		line, n, err := r.next()
		if err != nil || line == nil {
			return err
		}
		var row sessionRow
		if err := json.Unmarshal(line, &row); err != nil {
			r.skip(n, "not a whole JSON row")
			continue
		}
		switch {
		case row.Type == "message" && row.Message == nil,
			row.Type == "usage" && row.Usage == nil,
			row.Type == "model" && row.Model == "":
			r.skip(n, fmt.Sprintf("%s row without its %s", row.Type, row.Type))
			continue
		case row.Type == "meta":
			r.skip(n, "a second meta row")
			continue
		case row.Type != "message" && row.Type != "usage" && row.Type != "model" && row.Type != "reset":
			r.skip(n, fmt.Sprintf("unknown row type %s", quoteRowType(row.Type)))
			continue
		}
		out.Write(line)
		out.WriteByte('\n')
	}
}

// The reference zot's rows, as its session files hold them.
type (
	refMeta struct {
		ID       string    `json:"id"`
		Model    string    `json:"model"`
		Provider string    `json:"provider"`
		Started  time.Time `json:"started"`
	}
	refRow struct {
		Type       string            `json:"type"`
		Meta       *refMeta          `json:"meta"`
		Message    json.RawMessage   `json:"message"`
		Messages   []json.RawMessage `json:"messages"`
		Usage      *refUsage         `json:"usage"`
		Cumulative *refUsage         `json:"cumulative"`
	}
	refMessage struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
		Time    time.Time         `json:"time"`
	}
	// refBlock is any content block: which fields are set says what it is.
	refBlock struct {
		Text        *string         `json:"text"`
		MimeType    string          `json:"mime_type"`
		Data        string          `json:"data"`
		ID          string          `json:"id"`
		Name        string          `json:"name"`
		Arguments   json.RawMessage `json:"arguments"`
		CallID      string          `json:"call_id"`
		Content     []refBlock      `json:"content"`
		IsError     bool            `json:"is_error"`
		ReasoningID string          `json:"reasoning_id"`
		Summary     string          `json:"summary"`
		Encrypted   string          `json:"encrypted_content"`
	}
	refUsage struct {
		InputTokens      int     `json:"input_tokens"`
		OutputTokens     int     `json:"output_tokens"`
		CacheReadTokens  int     `json:"cache_read_tokens"`
		CacheWriteTokens int     `json:"cache_write_tokens"`
		CostUSD          float64 `json:"cost_usd"`
	}
)

// convertReference converts the reference zot's rows to this zot's: meta
// (the last one names the model in use), message (role tool becomes user),
// compaction (a reset) and usage; rename rows and reasoning blocks have no
// counterpart and are left out.
func (r *importReader) convertReference(first json.RawMessage, meta *SessionMeta, out *bytes.Buffer) error {
	var m refMeta
	if err := json.Unmarshal(first, &m); err != nil {
		return fmt.Errorf("line 1: the meta row does not fit the reference format (%v)", err)
	}
	meta.Provider, meta.Model = m.Provider, m.Model
	if !m.Started.IsZero() {
		meta.Created = m.Started.UTC().Truncate(time.Second)
	}
	var prev *refUsage
	dropped := 0
	for {
		line, n, err := r.next()
		if err != nil {
			return err
		}
		if line == nil {
			break
		}
		var row refRow
		if err := json.Unmarshal(line, &row); err != nil {
			r.skip(n, "not a whole JSON row")
			continue
		}
		switch row.Type {
		case "meta":
			if row.Meta == nil {
				r.skip(n, "meta row without its meta")
				continue
			}
			// A later meta row is the reference's record of a model switch.
			meta.Provider = cmp.Or(row.Meta.Provider, meta.Provider)
			meta.Model = cmp.Or(row.Meta.Model, meta.Model)
		case "message":
			msg, lost, err := convertRefMessage(row.Message)
			if err != nil {
				r.skip(n, err.Error())
				continue
			}
			dropped += lost
			if len(msg.Content) > 0 {
				writeJSONLine(out, messageRow{"message", sessionSafeMessage(msg)})
			}
		case "compaction":
			var msgs []Message
			for _, raw := range row.Messages {
				msg, lost, err := convertRefMessage(raw)
				dropped += lost
				if err == nil && len(msg.Content) > 0 {
					msgs = append(msgs, msg)
				}
			}
			writeJSONLine(out, resetRow{"reset", sessionSafeMessages(msgs)})
		case "usage":
			if row.Usage == nil {
				r.skip(n, "usage row without its usage")
				continue
			}
			u := *row.Usage
			// Some of the reference's files repeat the running total as
			// the call's usage: the difference of the totals is the call.
			if row.Cumulative != nil && prev != nil && u == *row.Cumulative {
				u = refUsage{u.InputTokens - prev.InputTokens, u.OutputTokens - prev.OutputTokens,
					u.CacheReadTokens - prev.CacheReadTokens, u.CacheWriteTokens - prev.CacheWriteTokens, u.CostUSD - prev.CostUSD}
				if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 || u.CostUSD < 0 {
					u = *row.Usage
				}
			}
			prev = row.Cumulative
			writeJSONLine(out, usageRow{"usage", Usage{Input: u.InputTokens, Output: u.OutputTokens,
				CacheRead: u.CacheReadTokens, CacheWrite: u.CacheWriteTokens, CostUSD: USD(u.CostUSD)}})
		case "rename":
			// A title: this zot names sessions by their first prompt.
		default:
			r.skip(n, fmt.Sprintf("unknown row type %s", quoteRowType(row.Type)))
		}
	}
	if dropped > 0 {
		r.notes = append(r.notes, fmt.Sprintf("%s: left out %d reasoning blocks (the provider's encrypted reasoning, which only it can read back)", r.src, dropped))
	}
	return nil
}

// convertRefMessage converts one of the reference's messages; lost counts
// the reasoning blocks left out.
func convertRefMessage(raw json.RawMessage) (msg Message, lost int, err error) {
	var m refMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return msg, 0, fmt.Errorf("message does not fit the reference format (%v)", err)
	}
	switch m.Role {
	case "user", "tool":
		msg.Role = RoleUser
	case "assistant":
		msg.Role = RoleAssistant
	default:
		return msg, 0, fmt.Errorf("message with an unknown role %q", sessionOneLine(m.Role, 20))
	}
	msg.Time = m.Time
	for _, rawBlock := range m.Content {
		var b refBlock
		if err := json.Unmarshal(rawBlock, &b); err != nil {
			return msg, 0, fmt.Errorf("content block does not fit the reference format (%v)", err)
		}
		switch converted, ok := convertRefBlock(b); {
		case ok:
			msg.Content = append(msg.Content, converted)
		case b.ReasoningID != "" || b.Summary != "" || b.Encrypted != "":
			lost++
		}
	}
	return msg, lost, nil
}

// convertRefBlock tells a block by the fields it has, in the order the
// reference reads them.
func convertRefBlock(b refBlock) (Block, bool) {
	switch {
	case b.ReasoningID != "" || b.Summary != "" || b.Encrypted != "":
		return Block{}, false
	case b.ID != "" && b.Name != "":
		args := b.Arguments
		if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
			args = json.RawMessage(`{}`)
		}
		return Block{Type: BlockToolCall, ID: b.ID, Name: b.Name, Args: args}, true
	case b.CallID != "":
		res := Block{Type: BlockToolResult, CallID: b.CallID, IsError: b.IsError}
		for _, c := range b.Content {
			if inner, ok := convertRefBlock(c); ok && (inner.Type == BlockText || inner.Type == BlockImage) {
				res.Content = append(res.Content, inner)
			}
		}
		return res, true
	case b.MimeType != "":
		return Block{Type: BlockImage, MimeType: b.MimeType, Data: b.Data}, true
	case b.Text != nil && *b.Text != "":
		return TextBlock(*b.Text), true
	}
	return Block{}, false
}

// SessionTreeRow is one line of the tree of a directory's sessions.
type SessionTreeRow struct {
	Info  SessionInfo
	Depth int // 0 for a session that is no fork (or whose parent is gone)
}

// SessionTree orders sessions as a tree: each fork under the session it was
// forked from, found by the parent's file name among list, forks oldest
// first; the sessions that are no fork keep list's order.
func SessionTree(list []SessionInfo) []SessionTreeRow {
	byName := map[string]int{}
	for i, info := range list {
		byName[filepath.Base(info.Path)] = i
	}
	children := map[int][]int{}
	var roots []int
	for i, info := range list {
		p, ok := byName[filepath.Base(info.Meta.Parent)]
		if info.Meta.Parent == "" || !ok || p == i {
			roots = append(roots, i)
			continue
		}
		children[p] = append(children[p], i)
	}
	var rows []SessionTreeRow
	seen := map[int]bool{}
	var walk func(i, depth int)
	walk = func(i, depth int) {
		if seen[i] {
			return
		}
		seen[i] = true
		rows = append(rows, SessionTreeRow{list[i], depth})
		kids := children[i]
		sort.SliceStable(kids, func(a, b int) bool { return list[kids[a]].Meta.Created.Before(list[kids[b]].Meta.Created) })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, i := range roots {
		walk(i, 0)
	}
	// Forks whose ancestry loops back on itself (hand-edited files) have
	// no root above them: they are shown at the top level.
	for i := range list {
		walk(i, 0)
	}
	return rows
}

// FormatSessionTree renders the tree as the lines /session tree and zot
// sessions list show: the session list's columns, a fork indented under
// its parent with the number of messages it kept.
func FormatSessionTree(rows []SessionTreeRow, now time.Time) []string {
	if len(rows) == 0 {
		return nil
	}
	infos := make([]SessionInfo, len(rows))
	for i, r := range rows {
		infos[i] = r.Info
		// What tells a fork from its parent is what came after the fork.
		if r.Depth > 0 && r.Info.ForkPrompt != "" {
			infos[i].FirstPrompt = r.Info.ForkPrompt
		}
	}
	lines := strings.Split(strings.TrimRight(FormatSessionList(infos, now), "\n"), "\n")
	for i, r := range rows {
		// Drop the list's number: the tree's order is its own.
		_, line, _ := strings.Cut(lines[i], ") ")
		if r.Depth > 0 {
			line = strings.Repeat("  ", r.Depth-1) + "└ " + line + fmt.Sprintf("  (fork after message %d)", r.Info.Meta.ForkedAt)
		}
		lines[i] = line
	}
	return lines
}

var sessionsUsage = commandHelp{
	name:  "zot sessions",
	about: "sessions for scripts: list, export, import",
	subs: []subcommandHelp{
		{"list", "[--json] [--cwd DIR]", "the sessions of this directory, forks under their parent", ""},
		{"export", "SESSION [-o PATH] [--cwd DIR]", "write SESSION as one portable file (default ./<name>.zotsession; -o - for stdout)", ""},
		{"import", "FILE [--cwd DIR]", "make FILE a new session of this directory (prints its path)", ""},
		{"rename", "SESSION NAME [--cwd DIR]", "name SESSION, so that zot -r NAME resumes it", ""},
		{"help", "[command]", "this text, or a command's", ""},
	},
	notes: `SESSION is a session id (or the start of one), a name given by /rename or
zot sessions rename (the newest session of that name), "latest", or a
session file.
FILE is an export, a session file of zot, or a session file or .zotsession
of the reference zot, which is converted. Rows that cannot be read are
skipped and named on stderr; the new session is written whole or not at all.

Flags:
  --cwd DIR   the directory whose sessions these are (default: the current one)
  --json      list: one JSON object per line

Exit status: 0 done, 1 failed (the reason is on stderr), 2 usage error.
`,
}

// sessionListEntry is a line of zot sessions list --json.
type sessionListEntry struct {
	ID          string    `json:"id"`
	Path        string    `json:"path"`
	Updated     time.Time `json:"updated"`
	Created     time.Time `json:"created"`
	Provider    string    `json:"provider"`
	Model       string    `json:"model"`
	Messages    int       `json:"messages"`
	CostUSD     USD       `json:"cost_usd"`
	FirstPrompt string    `json:"first_prompt"`
	Name        string    `json:"name,omitempty"`
	Parent      string    `json:"parent,omitempty"`
	ForkedAt    int       `json:"forked_at,omitempty"`
	Depth       int       `json:"depth"`
}

// runSessionsCommand is zot sessions: list, export and import for scripts.
func runSessionsCommand(args []string, stdout, stderr io.Writer) int {
	var outs []string
	var asJSON bool
	words, abs, ok := commandArgs(&sessionsUsage, args, map[string]*bool{"--json": &asJSON}, map[string]*[]string{"-o": &outs, "--output": &outs}, stderr)
	if !ok {
		return exitUsage
	}
	home := zotHome()
	failed := func(err error) int {
		fmt.Fprintf(stderr, "zot sessions: %s\n", sanitize(err.Error()))
		return exitFailure
	}
	switch {
	case len(words) == 1 && words[0] == "list":
		list, err := ListSessions(home, abs)
		if err != nil {
			return failed(err)
		}
		rows := SessionTree(list)
		if asJSON {
			// JSON lines, one per session: none when there are none.
			for _, r := range rows {
				i := r.Info
				entry := sessionListEntry{ID: i.Meta.ID, Path: i.Path, Updated: i.Updated.UTC(), Created: i.Meta.Created,
					Provider: i.Meta.Provider, Model: cmp.Or(i.Model, i.Meta.Model), Messages: i.Messages, CostUSD: USD(i.CostUSD),
					FirstPrompt: i.FirstPrompt, Name: i.Name, ForkedAt: i.Meta.ForkedAt, Depth: r.Depth}
				if i.Meta.Parent != "" {
					entry.Parent = filepath.Base(i.Meta.Parent)
				}
				writeJSONLine(stdout, entry)
			}
			return exitOK
		}
		if len(rows) == 0 {
			fmt.Fprintf(stdout, "no sessions of %s yet\n", sanitize(abs))
			return exitOK
		}
		for i, line := range FormatSessionTree(rows, time.Now()) {
			fmt.Fprintf(stdout, "%-8s  %s\n", sessionOneLine(rows[i].Info.Meta.ID, 16), line)
		}
		return exitOK
	case len(words) == 2 && words[0] == "export":
		src, err := findSession(home, abs, words[1])
		if err != nil {
			return failed(err)
		}
		dst := lastOr(outs, "")
		if dst == "-" {
			if err := ExportSessionTo(src, stdout); err != nil {
				return failed(err)
			}
			return exitOK
		}
		dst = exportPath(src, dst, ".")
		if err := ExportSession(src, dst); err != nil {
			return failed(err)
		}
		fmt.Fprintln(stdout, dst)
		return exitOK
	case len(words) == 3 && words[0] == "rename":
		path, err := findSession(home, abs, words[1])
		if err != nil {
			return failed(err)
		}
		if err := renameSession(path, words[2]); err != nil {
			return failed(err)
		}
		fmt.Fprintf(stdout, "%s is now named %s\n", sanitize(path), sanitize(words[2]))
		return exitOK
	case len(words) == 2 && words[0] == "import":
		path, notes, err := ImportSession(words[1], home, abs)
		for _, n := range notes {
			fmt.Fprintf(stderr, "zot sessions: %s\n", sanitize(n))
		}
		if err != nil {
			return failed(err)
		}
		fmt.Fprintln(stdout, path)
		return exitOK
	}
	return sessionsUsage.misuse(words, stderr)
}

// renameSession names the session at path. A session another zot has open
// is refused (its rows would interleave); /rename in that zot names it.
func renameSession(path, name string) error {
	if err := checkSessionName(name); err != nil {
		return err
	}
	sess, _, err := OpenSession(path)
	if err != nil {
		return err
	}
	if err := sess.SetName(name); err != nil {
		sess.Close()
		return err
	}
	return sess.Close()
}

// findSession resolves what a user names a session by: a file, "latest",
// an id, a name (the newest session of that name), or the start of an id,
// among the sessions of cwd.
func findSession(home, cwd, name string) (string, error) {
	if st, err := os.Stat(name); err == nil && st.Mode().IsRegular() {
		return name, nil
	}
	list, err := ListSessions(home, cwd)
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "", fmt.Errorf("no sessions of %s yet (each prompt run there starts one, in %s)", cwd, sessionDir(home, cwd))
	}
	if name == "latest" {
		return LatestSession(home, cwd)
	}
	for _, info := range list {
		if info.Meta.ID == name {
			return info.Path, nil
		}
	}
	for _, info := range list { // the newest first
		if info.Name == name && info.Newer == nil {
			return info.Path, nil
		}
	}
	var found []string
	for _, info := range list {
		if name != "" && strings.HasPrefix(info.Meta.ID, name) {
			found = append(found, info.Path)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no session %q (by name or id) in %s (zot sessions list shows them)", name, cwd)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%q is the start of %d session ids; give more of it", name, len(found))
}
