package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// Sessions: the JSONL file a conversation is recorded in as it happens
// (Session, a Recorder), read back whole and repaired for a resume
// (OpenSession, LoadedSession, which Agent.Restore takes), locked against
// a second writer, listed for a picker, forked at a message. It knows the
// data model and the one door only; export, import and the tree of forks
// are session_port.go's.

// sessionVersion is the format this zot writes and the newest it reads.
// Within a version, readers ignore unknown fields and skip unknown row types,
// so adding either is compatible; anything else needs a new version.
const sessionVersion = 1

// A session file is JSONL, one row per line, under
// $ZOT_HOME/sessions/<hash of cwd>/<UTC timestamp>-<id>.jsonl:
//
//	{"type":"meta","version":1,"id":…,"cwd":…,"provider":…,"model":…,"created":…}  first row, always
//	{"type":"message","message":{…}}     a message joined the transcript
//	{"type":"usage","usage":{…}}         one provider call, cost included
//	{"type":"reset","messages":[…]}      the transcript was replaced (compaction, clear)
//	{"type":"model","model":…}           the user switched model
//	{"type":"name","name":…}             the user named the session (/rename)
//
// The transcript is the messages of the last reset row (or none) followed by
// the message rows after it.

// SessionMeta is the first row of a session file.
type SessionMeta struct {
	Version  int       `json:"version"`
	ID       string    `json:"id"`
	Cwd      string    `json:"cwd"`
	Provider string    `json:"provider"`
	Model    string    `json:"model"`
	Created  time.Time `json:"created"`
	Parent   string    `json:"parent,omitempty"`    // path of the session this was forked from
	ForkedAt int       `json:"forked_at,omitempty"` // messages kept from the parent
	Name     string    `json:"name,omitempty"`      // set by /rename; a name row changes it
}

// The rows as written; each is encoded by writeRow.
type (
	metaRow struct {
		Type string `json:"type"`
		SessionMeta
	}
	messageRow struct {
		Type    string  `json:"type"`
		Message Message `json:"message"`
	}
	usageRow struct {
		Type  string `json:"type"`
		Usage Usage  `json:"usage"`
	}
	resetRow struct {
		Type     string    `json:"type"`
		Messages []Message `json:"messages"`
	}
	modelRow struct {
		Type  string `json:"type"`
		Model string `json:"model"`
	}
	nameRow struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
)

// sessionRow is any row as read: Type selects the fields that matter. A
// model row's model lands in SessionMeta.Model, a name row's name in
// SessionMeta.Name.
type sessionRow struct {
	Type string `json:"type"`
	SessionMeta
	Message  *Message  `json:"message"`
	Usage    *Usage    `json:"usage"`
	Messages []Message `json:"messages"`
}

// Session is an open session file that records a conversation as it grows.
// It implements Recorder and is safe for concurrent use.
//
// Rows are appended whole, each with one write call on a file opened
// O_APPEND, so a crash tears at most the last line, which OpenSession
// repairs. Sync (at the end of each turn) is the only fsync. A new session's
// file is created by the first message it records; Close flushes and closes
// it. Meta is fixed when the session is made, except Meta.Model, which
// SetModel changes.
//
// While a Session has its file open it holds an exclusive flock on it, so a
// second zot cannot append to the same file (their rows would interleave);
// opening a session another process holds fails with ErrSessionInUse. After
// a row fails to be written (a full disk, EIO) every later write fails too:
// a smaller row must not land after a bigger one that did not, leaving a
// hole in the transcript.
type Session struct {
	Path string
	Meta SessionMeta

	mu      sync.Mutex
	f       *os.File // nil until the first message of a new session
	size    int64    // bytes known whole in the file
	dirty   bool     // rows written since the last fsync
	newDir  bool     // the file is new: fsync its directory on the next Sync
	closed  bool
	failed  error   // the first failed write or sync; nothing is written after it
	pending []Usage // usage recorded before the file existed
	buf     bytes.Buffer
	enc     *json.Encoder
}

// LoadedSession is what OpenSession read: the transcript as it stands after
// every reset and repair, the summed usage, the context size of the last
// provider call since the last reset, and a sentence for each repair.
// Meta.Model is the model in use at the end of the file.
type LoadedSession struct {
	Meta        SessionMeta
	Messages    []Message
	Usage       Usage
	LastContext int
	Repairs     []string
}

// SessionInfo describes one session for a resume list.
type SessionInfo struct {
	Path        string
	Meta        SessionMeta // as in the meta row
	Updated     time.Time   // the file's modification time
	Messages    int         // in the transcript as it stands
	CostUSD     float64
	FirstPrompt string
	ForkPrompt  string // a fork's first prompt after the fork point
	Model       string // the model in use at the end
	Name        string // the name given last (/rename), "" for none
	// Newer is set for a session written by a newer zot: listed, so that
	// it does not silently vanish, but not something this zot can open.
	Newer *newerSessionError
}

// newerSessionError is a session whose format is newer than this zot's.
type newerSessionError struct {
	path    string
	version int
}

func (e *newerSessionError) Error() string {
	return fmt.Sprintf("session %s was written by a newer zot (format %d); upgrade zot to open it", e.path, e.version)
}

// NewSession prepares a new session for cwd under home ($ZOT_HOME). Nothing
// touches the disk until the first message is recorded, so a session without
// a prompt leaves nothing behind.
func NewSession(home, cwd, provider, model string) *Session {
	if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}
	now := time.Now().UTC().Truncate(time.Second)
	meta := SessionMeta{
		Version:  sessionVersion,
		ID:       newSessionID(),
		Cwd:      cwd,
		Provider: provider,
		Model:    model,
		Created:  now,
	}
	name := now.Format("20060102T150405Z") + "-" + meta.ID + ".jsonl"
	return &Session{Path: filepath.Join(sessionDir(home, cwd), name), Meta: meta}
}

// sessionDir is where the sessions of cwd live: one directory per working
// directory, named by a hash so any path makes a valid name.
func sessionDir(home, cwd string) string {
	if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}
	sum := sha256.Sum256([]byte(cwd))
	return filepath.Join(home, "sessions", hex.EncodeToString(sum[:])[:16])
}

func newSessionID() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		// Only very old kernels fail here; the time keeps names apart.
		n := time.Now().UnixNano()
		b = [4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	}
	return hex.EncodeToString(b[:])
}

// Append records a message. The first one creates the file.
func (s *Session) Append(m Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.createLocked(); err != nil {
		return fmt.Errorf("append session %s: %w", s.Path, err)
	}
	if err := s.writeRow(messageRow{"message", sessionSafeMessage(m)}); err != nil {
		return fmt.Errorf("append session %s: %w", s.Path, err)
	}
	return nil
}

// AppendUsage records one provider call. Before the file exists the usage is
// held and written after the meta row.
func (s *Session) AppendUsage(u Usage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("append usage to session %s: %w", s.Path, os.ErrClosed)
	}
	if s.f == nil {
		s.pending = append(s.pending, u)
		return nil
	}
	if err := s.writeRow(usageRow{"usage", u}); err != nil {
		return fmt.Errorf("append usage to session %s: %w", s.Path, err)
	}
	return nil
}

// Reset records that the transcript was replaced by msgs (nil for /clear).
// Clearing a session that has no file yet leaves nothing behind.
func (s *Session) Reset(msgs []Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil && len(msgs) == 0 && !s.closed {
		return nil
	}
	if err := s.createLocked(); err != nil {
		return fmt.Errorf("reset session %s: %w", s.Path, err)
	}
	if err := s.writeRow(resetRow{"reset", sessionSafeMessages(msgs)}); err != nil {
		return fmt.Errorf("reset session %s: %w", s.Path, err)
	}
	return nil
}

// SetModel records that the user switched model.
func (s *Session) SetModel(model string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("set model in session %s: %w", s.Path, os.ErrClosed)
	}
	if model == s.Meta.Model {
		return nil
	}
	s.Meta.Model = model
	if s.f == nil {
		return nil // the meta row will carry it
	}
	if err := s.writeRow(modelRow{"model", model}); err != nil {
		return fmt.Errorf("set model in session %s: %w", s.Path, err)
	}
	return nil
}

// Name is the session's name, "" before one is given.
func (s *Session) Name() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Meta.Name
}

// SetName records the name the user gave the session; --resume NAME finds
// it by that name.
func (s *Session) SetName(name string) error {
	if err := checkSessionName(name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("name session %s: %w", s.Path, os.ErrClosed)
	}
	if name == s.Meta.Name {
		return nil
	}
	s.Meta.Name = name
	if s.f == nil {
		return nil // the meta row will carry it
	}
	if err := s.writeRow(nameRow{"name", name}); err != nil {
		return fmt.Errorf("name session %s: %w", s.Path, err)
	}
	return s.syncLocked()
}

// checkSessionName refuses names that `zot -r NAME` could not take back:
// an empty one, one that reads as a flag, or one with control characters
// or line breaks (it is shown in lists, one session a line).
func checkSessionName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errors.New("a session name cannot be empty")
	case strings.HasPrefix(name, "-"):
		return fmt.Errorf("a session name cannot start with '-' (zot -r %s would read it as a flag)", name)
	case name != strings.TrimSpace(name):
		return fmt.Errorf("a session name cannot start or end with a space: %q", name)
	case name != sanitize(name) || strings.ContainsAny(name, "\n\r\t"):
		return fmt.Errorf("a session name cannot hold control characters: %q", name)
	case utf8.RuneCountInString(name) > 100:
		return errors.New("a session name can be at most 100 characters")
	}
	return nil
}

// Sync flushes the rows written so far to stable storage. The agent calls it
// at the end of each turn; rows are never synced one by one.
func (s *Session) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("sync session %s: %w", s.Path, os.ErrClosed)
	}
	if err := s.syncLocked(); err != nil {
		return fmt.Errorf("sync session %s: %w", s.Path, err)
	}
	return nil
}

// Close syncs and closes the file. It is safe to call more than once.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.f == nil {
		return nil
	}
	var err error
	if s.failed == nil { // a failure was reported when it happened
		err = s.syncLocked()
	}
	// Unlock before closing: a child forked at this moment holds a copy of
	// the descriptor until its exec closes it, and with it the lock.
	syscall.Flock(int(s.f.Fd()), syscall.LOCK_UN)
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("close session %s: %w", s.Path, err)
	}
	return nil
}

func (s *Session) syncLocked() error {
	if s.f == nil || !s.dirty {
		return nil
	}
	if s.failed != nil {
		return s.failedErr()
	}
	if err := s.f.Sync(); err != nil {
		s.failed = err
		return err
	}
	s.dirty = false
	if s.newDir {
		// A new file's name is only durable once its directory is synced.
		d, err := os.Open(filepath.Dir(s.Path))
		if err != nil {
			return err
		}
		err = d.Sync()
		d.Close()
		if err != nil {
			return err
		}
		s.newDir = false
	}
	return nil
}

// createLocked creates the file of a new session and writes its meta row
// and any usage recorded so far.
func (s *Session) createLocked() error {
	if s.closed {
		return os.ErrClosed
	}
	if s.f != nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(s.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if err := lockSession(f, s.Path); err != nil {
		f.Close()
		os.Remove(s.Path)
		return err
	}
	s.f, s.size, s.newDir = f, 0, true
	if err := s.writeRow(metaRow{"meta", s.Meta}); err != nil {
		// Leave no meta-less file behind; the next Append tries again.
		f.Close()
		os.Remove(s.Path)
		s.f, s.failed = nil, nil
		return err
	}
	pending := s.pending
	s.pending = nil
	for _, u := range pending {
		if err := s.writeRow(usageRow{"usage", u}); err != nil {
			return err
		}
	}
	return nil
}

// writeRow appends one row with a single write call, so that a crash tears
// at most this line. A write that fails halfway is cut off again (if even
// that fails, loading drops the fragment as torn). After a failure nothing
// more is written.
func (s *Session) writeRow(row any) error {
	if s.failed != nil {
		return s.failedErr()
	}
	if s.enc == nil {
		s.enc = json.NewEncoder(&s.buf)
		s.enc.SetEscapeHTML(false)
	}
	s.buf.Reset()
	if err := s.enc.Encode(row); err != nil { // Encode ends the line with '\n'
		s.failed = err
		return err
	}
	n, err := s.f.Write(s.buf.Bytes())
	if s.buf.Cap() > 1<<20 {
		// Let a big row (an image) go; enc keeps writing to &s.buf.
		s.buf = bytes.Buffer{}
	}
	if n > 0 {
		s.dirty = true
	}
	if err != nil {
		if st, serr := s.f.Stat(); n > 0 && serr == nil && st.Size() == s.size+int64(n) {
			s.f.Truncate(s.size)
		}
		s.failed = err
		return err
	}
	s.size += int64(n)
	return nil
}

// failedErr is what every write after a failed one returns.
func (s *Session) failedErr() error {
	return fmt.Errorf("not written: an earlier row could not be written (%w), and writing later ones would leave a hole", s.failed)
}

// ErrSessionInUse matches (errors.Is) opening a session file that another
// process holds open for appending.
var ErrSessionInUse = errors.New("session in use")

// lockSession takes the exclusive lock a Session holds on its file. flock
// belongs to the open file: it ends when the file is closed or the process
// dies (kill -9 included), and programs zot starts do not inherit it (the
// file is close-on-exec).
func lockSession(f *os.File, path string) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		who := "another process"
		if pid := flockHolder(f); pid > 0 {
			who = fmt.Sprintf("another process (pid %d)", pid)
		}
		return fmt.Errorf("session %s is in use by %s, another zot probably: two writers would interleave their turns in one file; wait for it to end, or start a new session (without --continue or --session): %w", path, who, ErrSessionInUse)
	}
	return fmt.Errorf("lock session %s: %w (use --no-session on a file system without locks)", path, err)
}

// flockHolder is the pid holding a flock on f, from /proc/locks where there
// is one; 0 when it cannot be told.
func flockHolder(f *os.File) int {
	info, err := f.Stat()
	if err != nil {
		return 0
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	// Linux encodes a device number as 12 bits of major and 20 of minor,
	// split around each other; /proc/locks shows them in hex.
	dev := uint64(st.Dev)
	major, minor := (dev>>8)&0xfff|(dev>>32)&^0xfff, dev&0xff|(dev>>12)&^0xff
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, st.Ino)
	for _, line := range strings.Split(string(locks), "\n") {
		// 1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF
		fields := strings.Fields(line)
		if len(fields) >= 6 && fields[1] == "FLOCK" && fields[5] == want {
			if pid, err := strconv.Atoi(fields[4]); err == nil {
				return pid
			}
		}
	}
	return 0
}

// sessionSafeMessages and sessionSafeMessage make messages encodable.
// Tool arguments cut off mid-stream are not valid JSON, which json.Marshal
// refuses; they are stored as a JSON string of the raw text instead, and so
// is a JSON string (so the two cannot be confused). Loading unquotes any
// string arguments (sessionRestoreArgs), giving back the exact bytes.
func sessionSafeMessages(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = sessionSafeMessage(m)
	}
	return out
}

func sessionSafeMessage(m Message) Message {
	for i, b := range m.Content {
		if b.Type != BlockToolCall || !sessionQuoteArgs(b.Args) {
			continue
		}
		content := append([]Block(nil), m.Content...)
		for j := i; j < len(content); j++ {
			if content[j].Type == BlockToolCall && sessionQuoteArgs(content[j].Args) {
				quoted, _ := json.Marshal(string(content[j].Args))
				content[j].Args = quoted
			}
		}
		m.Content = content
		break
	}
	return m
}

func sessionQuoteArgs(args json.RawMessage) bool {
	return len(args) > 0 && (!json.Valid(args) || bytes.HasPrefix(bytes.TrimLeft(args, " \t\r\n"), []byte(`"`)))
}

func sessionRestoreArgs(m *Message) {
	for i := range m.Content {
		b := &m.Content[i]
		if b.Type == BlockToolCall && len(b.Args) > 0 && b.Args[0] == '"' {
			var raw string
			if json.Unmarshal(b.Args, &raw) == nil {
				b.Args = json.RawMessage(raw)
			}
		}
	}
}

// OpenSession loads a session file to continue it. It repairs what a crash
// or a hand edit left behind and says so in LoadedSession.Repairs: a torn
// last line is dropped and the file truncated back to the last whole line;
// invalid lines and unknown rows in the middle are skipped; tool calls left
// without results are answered as interrupted. A file without a meta row, or
// written by a newer zot, is refused.
func OpenSession(path string) (*Session, *LoadedSession, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open session %s: %w", path, err)
	}
	// Before reading: a writer that is still at work is not a crash to repair.
	if err := lockSession(f, path); err != nil {
		f.Close()
		return nil, nil, err
	}
	sc, err := scanSession(path, f)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	s := &Session{Path: path, Meta: sc.meta, f: f, size: sc.size}
	s.Meta.Model = sc.model
	s.Meta.Name = sc.name
	loaded := &LoadedSession{Meta: s.Meta, Usage: sc.usage, LastContext: sc.lastContext, Repairs: sc.repairs}

	fail := func(err error) (*Session, *LoadedSession, error) {
		f.Close()
		return nil, nil, fmt.Errorf("repair session %s: %w", path, err)
	}
	switch {
	case sc.good < sc.size:
		if err := f.Truncate(sc.good); err != nil {
			return fail(err)
		}
		loaded.Repairs = append(loaded.Repairs, fmt.Sprintf("truncated the file from %d to %d bytes so new rows start on a whole line", sc.size, sc.good))
		s.size, s.dirty = sc.good, true
	case sc.unterminated:
		if _, err := f.Write([]byte{'\n'}); err != nil {
			return fail(err)
		}
		loaded.Repairs = append(loaded.Repairs, fmt.Sprintf("line %d: the last line was whole but had no newline; added one", sc.lastLine))
		s.size, s.dirty = s.size+1, true
	}

	msgs, notes, tailOnly := repairOrphanedCalls(sc.msgs, sc.lines)
	loaded.Messages = msgs
	if len(notes) > 0 {
		loaded.Repairs = append(loaded.Repairs, notes...)
		// The repair is written back so the file reads right on its own (to
		// any reader, and to appends that follow). Answers that only add
		// messages at the end are appended as message rows, exactly what the
		// agent would have written; an answer inside the transcript cannot be
		// appended in place, so the repaired transcript is written as a
		// reset row.
		if tailOnly {
			for _, m := range msgs[len(sc.msgs):] {
				if err := s.writeRow(messageRow{"message", sessionSafeMessage(m)}); err != nil {
					return fail(err)
				}
			}
		} else if err := s.writeRow(resetRow{"reset", sessionSafeMessages(msgs)}); err != nil {
			return fail(err)
		}
	}
	if s.dirty {
		if err := s.syncLocked(); err != nil {
			return fail(err)
		}
	}
	return s, loaded, nil
}

// sessionScan is what reading a session file found, before any repair is
// written back.
type sessionScan struct {
	meta        SessionMeta
	model       string    // the model in use at the end
	name        string    // the name given last
	msgs        []Message // the transcript after every reset
	lines       []int     // the line each message came from
	usage       Usage
	lastContext int // of the last usage row after the last reset
	firstPrompt string
	forkPrompt  string // the first prompt after a fork's fork point
	repairs     []string

	size         int64 // bytes read
	good         int64 // bytes up to the end of the last line that is whole JSON
	lastLine     int
	unterminated bool // the last line is whole JSON without a newline
}

// maxSessionLine bounds one row of a session file. zot's own rows stay far
// below it (an rpc prompt, images and all, is at most 64 MiB); a file with
// a longer line was not written by zot, and is refused whole rather than
// held in memory or cut.
const maxSessionLine = 256 << 20

// scanSession reads a session without changing it.
func scanSession(path string, r io.Reader) (*sessionScan, error) {
	return scanSessionMax(path, r, maxSessionLine)
}

// scanSessionMax is scanSession with lines of at most max bytes.
func scanSessionMax(path string, r io.Reader, max int) (*sessionScan, error) {
	lr := newLineReader(r, max, overLongFail)
	sc := &sessionScan{}
	var (
		sawMeta bool
		tail    []string // notes on invalid lines after the last whole one
	)
	for lineNo := 1; ; lineNo++ {
		line, err := lr.next()
		if isLineTooLong(err) {
			return nil, fmt.Errorf("open session %s: line %d is longer than %d bytes; zot reads no further and changes nothing (move the file aside, or cut the line, to continue it)", path, lineNo, max)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read session %s: %w", path, err)
		}
		sc.size = lr.consumed
		terminated := lr.terminated
		if len(bytes.TrimSpace(line)) == 0 {
			if terminated && len(tail) == 0 {
				sc.good = sc.size
			}
			continue
		}

		var row sessionRow
		jerr := decodeStrictJSON(line, &row)
		var syntax *json.SyntaxError
		if errors.As(jerr, &syntax) || (jerr != nil && !terminated) {
			if !sawMeta {
				return nil, fmt.Errorf("open session %s: not a zot session file (line %d is not a meta row)", path, lineNo)
			}
			why := "not valid JSON"
			if !terminated {
				why = "cut off before its end"
			}
			tail = append(tail, fmt.Sprintf("line %d: %s", lineNo, why))
			continue
		}
		// The line is whole JSON: everything before it stays.
		for _, t := range tail {
			sc.repairs = append(sc.repairs, t+"; skipped it")
		}
		tail = tail[:0]
		sc.good, sc.lastLine, sc.unterminated = sc.size, lineNo, !terminated

		if !sawMeta {
			if jerr != nil || row.Type != "meta" {
				return nil, fmt.Errorf("open session %s: not a zot session file (line %d is not a meta row)", path, lineNo)
			}
			if row.Version > sessionVersion {
				return nil, &newerSessionError{path, row.Version}
			}
			if row.Version < 1 {
				return nil, fmt.Errorf("open session %s: meta row has no valid version (%d)", path, row.Version)
			}
			sawMeta = true
			sc.meta = row.SessionMeta
			sc.model = row.Model
			sc.name = row.Name
			continue
		}
		if jerr != nil {
			sc.repairs = append(sc.repairs, fmt.Sprintf("line %d: %s row does not fit the format (%v); skipped it", lineNo, quoteRowType(row.Type), jerr))
			continue
		}
		switch row.Type {
		case "message":
			if row.Message == nil {
				sc.repairs = append(sc.repairs, fmt.Sprintf("line %d: message row without a message; skipped it", lineNo))
				continue
			}
			sessionRestoreArgs(row.Message)
			sc.noteFirstPrompt(*row.Message)
			sc.msgs = append(sc.msgs, *row.Message)
			sc.lines = append(sc.lines, lineNo)
		case "usage":
			if row.Usage == nil {
				sc.repairs = append(sc.repairs, fmt.Sprintf("line %d: usage row without usage; skipped it", lineNo))
				continue
			}
			sc.usage.Add(*row.Usage)
			sc.lastContext = row.Usage.ContextTokens()
		case "reset":
			// Compaction and /clear reset the transcript, and the agent
			// forgets the context size with it.
			sc.lastContext = 0
			sc.msgs = row.Messages
			sc.lines = make([]int, len(row.Messages), len(row.Messages)+16)
			for i := range sc.msgs {
				sessionRestoreArgs(&sc.msgs[i])
				sc.noteFirstPrompt(sc.msgs[i])
				sc.lines[i] = lineNo
			}
		case "model":
			if row.Model == "" {
				sc.repairs = append(sc.repairs, fmt.Sprintf("line %d: model row without a model; skipped it", lineNo))
				continue
			}
			sc.model = row.Model
		case "name":
			if checkSessionName(row.Name) != nil {
				sc.repairs = append(sc.repairs, fmt.Sprintf("line %d: name row without a usable name; skipped it", lineNo))
				continue
			}
			sc.name = row.Name
		case "meta":
			sc.repairs = append(sc.repairs, fmt.Sprintf("line %d: a second meta row; skipped it", lineNo))
		default:
			sc.repairs = append(sc.repairs, fmt.Sprintf("line %d: unknown row type %s (from a newer zot?); skipped it", lineNo, quoteRowType(row.Type)))
		}
	}
	if !sawMeta {
		return nil, fmt.Errorf("open session %s: not a zot session file (no meta row)", path)
	}
	for _, t := range tail {
		sc.repairs = append(sc.repairs, t+"; dropped it as torn by a crash")
	}
	return sc, nil
}

func quoteRowType(t string) string {
	if t == "" {
		return "untyped"
	}
	return fmt.Sprintf("%q", t)
}

func (sc *sessionScan) noteFirstPrompt(m Message) {
	if sc.forkPrompt == "" && sc.meta.Parent != "" && len(sc.msgs) >= sc.meta.ForkedAt && m.isPrompt() {
		sc.forkPrompt, _ = splitPrompt(m)
	}
	if sc.firstPrompt == "" && m.isPrompt() {
		sc.firstPrompt, _ = splitPrompt(m)
	}
}

// splitPrompt parts a prompt message into what the user typed and what was
// added to it — attached files and images, hooks' context — which
// Agent.Prompt puts first, the typed text last in a block of its own. A
// prompt of images alone has no typed text.
func splitPrompt(m Message) (typed string, added []Block) {
	if n := len(m.Content); n > 0 && m.Content[n-1].Type == BlockText {
		return m.Content[n-1].Text, m.Content[:n-1]
	}
	return "", m.Content
}

// interruptedResult answers, on load, a tool call the file has no result
// for: zot stopped (a crash, kill -9, a power cut) while the call was
// pending, perhaps while it ran, so the model must not take it as not run.
func interruptedResult(callID string) Block {
	return Block{Type: BlockToolResult, CallID: callID, IsError: true, Content: []Block{TextBlock(
		"interrupted: zot stopped while this call was pending, and its result was lost; it may have run, in part or in full, so check before repeating it")}}
}

// repairOrphanedCalls answers every tool call whose result is missing with
// an interrupted result, so the transcript is one a provider accepts. A call's
// result belongs in the message right after it: a user message of tool
// results, which gets the missing ones added, or else a new one is put in.
// It returns msgs itself when nothing was missing; tailOnly says every
// answer was a new message at the end.
func repairOrphanedCalls(msgs []Message, lines []int) (out []Message, notes []string, tailOnly bool) {
	var fixed []Message // nil until the first repair
	tailOnly = true
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if fixed != nil {
			fixed = append(fixed, m)
		}
		if m.Role != RoleAssistant {
			continue
		}
		calls := m.ToolCalls()
		if len(calls) == 0 {
			continue
		}
		hasResults := i+1 < len(msgs) && msgs[i+1].Role == RoleUser && !msgs[i+1].isPrompt()
		answered := map[string]bool{}
		if hasResults {
			for _, b := range msgs[i+1].Content {
				if b.Type == BlockToolResult {
					answered[b.CallID] = true
				}
			}
		}
		var missing []Block
		var ids []string
		for _, c := range calls {
			if !answered[c.ID] {
				missing = append(missing, interruptedResult(c.ID))
				ids = append(ids, c.ID)
			}
		}
		if len(missing) == 0 {
			continue
		}
		if fixed == nil {
			fixed = append(make([]Message, 0, len(msgs)+1), msgs[:i+1]...)
		}
		notes = append(notes, fmt.Sprintf("line %d: tool calls without results (%s); answered them as interrupted (they may have run)", lines[i], strings.Join(ids, ", ")))
		if hasResults {
			merged := msgs[i+1]
			merged.Content = append(append([]Block(nil), merged.Content...), missing...)
			fixed = append(fixed, merged)
			i++ // the results message is done
			tailOnly = false
			continue
		}
		fixed = append(fixed, Message{Role: RoleUser, Content: missing, Time: m.Time})
		if i+1 < len(msgs) {
			tailOnly = false
		}
	}
	if fixed == nil {
		return msgs, nil, true
	}
	return fixed, notes, tailOnly
}

// ListSessions returns the sessions of cwd, the most recently updated first.
// A directory that does not exist yet is an empty list; files that are not
// readable sessions are left out (opening one says why).
func ListSessions(home, cwd string) ([]SessionInfo, error) {
	dir := sessionDir(home, cwd)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sessions in %s: %w", dir, err)
	}
	var list []SessionInfo
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		info, err := readSessionInfo(path)
		var newer *newerSessionError
		if errors.As(err, &newer) {
			info = SessionInfo{Path: path, Newer: newer}
			if st, err := e.Info(); err == nil {
				info.Updated = st.ModTime()
			}
		} else if err != nil {
			continue
		}
		list = append(list, info)
	}
	sort.Slice(list, func(i, j int) bool {
		if !list[i].Updated.Equal(list[j].Updated) {
			return list[i].Updated.After(list[j].Updated)
		}
		return list[i].Path > list[j].Path // names start with the creation time
	})
	return list, nil
}

func readSessionInfo(path string) (SessionInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return SessionInfo{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return SessionInfo{}, err
	}
	sc, err := scanSession(path, f)
	if err != nil {
		return SessionInfo{}, err
	}
	return SessionInfo{
		Path:        path,
		Meta:        sc.meta,
		Updated:     st.ModTime(),
		Messages:    len(sc.msgs),
		CostUSD:     float64(sc.usage.CostUSD),
		FirstPrompt: sc.firstPrompt,
		ForkPrompt:  sc.forkPrompt,
		Model:       sc.model,
		Name:        sc.name,
	}, nil
}

// LatestSession returns the path of the most recently updated session of
// cwd, for --continue. It reads only the first line of each candidate.
func LatestSession(home, cwd string) (string, error) {
	dir := sessionDir(home, cwd)
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("find latest session in %s: %w", dir, err)
	}
	type candidate struct {
		path    string
		updated time.Time
	}
	var cands []candidate
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		st, err := e.Info()
		if err != nil {
			continue
		}
		cands = append(cands, candidate{filepath.Join(dir, e.Name()), st.ModTime()})
	}
	sort.Slice(cands, func(i, j int) bool {
		if !cands[i].updated.Equal(cands[j].updated) {
			return cands[i].updated.After(cands[j].updated)
		}
		return cands[i].path > cands[j].path
	})
	for _, c := range cands {
		switch version := sessionVersionOf(c.path); {
		case version > sessionVersion:
			return "", fmt.Errorf("the latest %w; or pick an older one with --resume", &newerSessionError{c.path, version})
		case version >= 1:
			return c.path, nil
		}
	}
	return "", fmt.Errorf("no session to continue in %s (sessions are kept in %s); start one without --continue", cwd, dir)
}

// sessionVersionOf is the format version in a file's meta row, 0 when the
// file does not start with one.
func sessionVersionOf(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 64<<10).ReadSlice('\n')
	if err != nil {
		return 0
	}
	var row sessionRow
	if json.Unmarshal(line, &row) != nil || row.Type != "meta" {
		return 0
	}
	return max(row.Version, 0)
}

// Fork starts a new session, whose parent is s, holding msgs[:at]. The cut
// must fall before a prompt (or at the end), so that no tool call loses its
// result. The new file is written and synced at once.
func (s *Session) Fork(at int, msgs []Message) (*Session, error) {
	if at < 0 || at > len(msgs) {
		return nil, fmt.Errorf("fork session %s: cannot keep %d messages of %d", s.Path, at, len(msgs))
	}
	if at < len(msgs) && !msgs[at].isPrompt() {
		return nil, fmt.Errorf("fork session %s: message %d is not a prompt; fork before a prompt so no tool call is cut from its result", s.Path, at+1)
	}
	if at > 0 && at == len(msgs) && msgs[at-1].Role == RoleAssistant && len(msgs[at-1].ToolCalls()) > 0 {
		return nil, fmt.Errorf("fork session %s: the last message kept has tool calls without results; fork before a prompt", s.Path)
	}
	s.mu.Lock()
	meta := s.Meta
	s.mu.Unlock()

	// The fork lives beside its parent, which is where NewSession would put
	// it too unless the parent was opened from elsewhere.
	child := NewSession("", meta.Cwd, meta.Provider, meta.Model)
	child.Path = filepath.Join(filepath.Dir(s.Path), filepath.Base(child.Path))
	child.Meta.Parent = s.Path
	child.Meta.ForkedAt = at
	child.mu.Lock()
	defer child.mu.Unlock()
	err := child.createLocked()
	for i := 0; err == nil && i < at; i++ {
		err = child.writeRow(messageRow{"message", sessionSafeMessage(msgs[i])})
	}
	if err == nil {
		err = child.syncLocked()
	}
	if err != nil {
		if child.f != nil {
			child.f.Close()
			os.Remove(child.Path)
		}
		return nil, fmt.Errorf("fork session %s: %w", s.Path, err)
	}
	return child, nil
}

// FormatSessionList renders sessions as the numbered lines `zot -r` shows:
//
//  1. 2026-11-22 10:45  claude-sonnet-4-5  12 msgs  $0.0123  fix the failing test…
//
// Times are shown in now's location. First prompts come from the session
// files, so they are put on one line and stripped of control characters.
func FormatSessionList(list []SessionInfo, now time.Time) string {
	numW, modelW, msgsW := len(fmt.Sprint(len(list))), 0, 0
	models := make([]string, len(list))
	counts := make([]string, len(list))
	for i, info := range list {
		models[i] = info.Model
		if models[i] == "" {
			models[i] = info.Meta.Model
		}
		models[i] = sessionOneLine(models[i], 40)
		counts[i] = fmt.Sprintf("%d msgs", info.Messages)
		if info.Messages == 1 {
			counts[i] = "1 msg"
		}
		modelW = max(modelW, utf8.RuneCountInString(models[i]))
		msgsW = max(msgsW, len(counts[i]))
	}
	var b strings.Builder
	for i, info := range list {
		prompt := sessionOneLine(info.FirstPrompt, 60)
		switch {
		case info.Newer != nil:
			prompt = fmt.Sprintf("(written by a newer zot, format %d: upgrade zot to open it)", info.Newer.version)
		case prompt == "":
			prompt = "(no prompt)"
		}
		if info.Name != "" {
			prompt = "[" + sessionOneLine(info.Name, 40) + "] " + prompt
		}
		pad := strings.Repeat(" ", modelW-utf8.RuneCountInString(models[i]))
		fmt.Fprintf(&b, "%*d) %s  %s%s  %*s  $%.4f  %s\n",
			numW, i+1, info.Updated.In(now.Location()).Format("2006-01-02 15:04"),
			models[i], pad, msgsW, counts[i], info.CostUSD, prompt)
	}
	return b.String()
}

// sessionOneLine sanitizes s, folds it onto one line and cuts it to n
// runes (a column of a list, not a byte budget), marking the cut with "…".
func sessionOneLine(s string, n int) string {
	s = strings.Join(strings.Fields(sanitize(s)), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return strings.TrimRight(string([]rune(s)[:n]), " ") + ellipsis
}
