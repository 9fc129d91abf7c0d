package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Approvals: what a person (the TUI) or a client (rpc, --json with
// --approvals-stdin) is shown when a gate asks about a tool call, and the
// "yes, and don't ask again" answers a session keeps. The question carries
// what the call would do — an edit's diff, a command and who asked — and
// what "don't ask again" would allow, which is offered only where an allow
// can end the question: when every ask came from a default (Claude Code's
// default mode, --no-yolo), never from an ask or deny rule, a validator, a
// hook or an extension, whose asks an allow does not override.

// ApprovalDecision is a client's answer to an approval_request.
type ApprovalDecision string

const (
	ApprovalAllow  ApprovalDecision = "allow"
	ApprovalDeny   ApprovalDecision = "deny"
	ApprovalAlways ApprovalDecision = "always"
	// ApprovalNever is a no that also refuses, without asking, what the
	// offer would have allowed, for the rest of the session (zot acp's
	// "reject always"). It is no rpc decision: there it is unknown, a no.
	ApprovalNever ApprovalDecision = "never"
)

// approvalQuestion is one call a gate asked about, as the one who answers
// sees it.
type approvalQuestion struct {
	Call ToolCall
	Asks []GateNote
	// Diff is the change an edit or write would make, as the edit tool
	// writes its result ("" for other tools, or when it cannot be made).
	Diff  string
	Offer approvalOffer
	// Plan, when set, makes the question a plan to approve (present_plan
	// in plan mode) rather than a call a gate asked about.
	Plan *planQuestion
}

// planQuestion is a plan the model presented, and the modes the user may
// carry it out in, the first the one offered first.
type planQuestion struct {
	Text  string
	Modes []string
}

// approvalOffer is what "yes, and don't ask again" would allow; the zero
// value offers nothing.
type approvalOffer struct {
	// Prefixes are the command prefixes of a bash line, one per simple
	// command ("go test"); each allows that prefix and any words after it.
	Prefixes []string
	// Edits allows edit and write calls inside the working directory.
	Edits bool
}

func (o approvalOffer) any() bool { return len(o.Prefixes) > 0 || o.Edits }

// Describe says what the offer allows, for a person: "`go test *`".
func (o approvalOffer) Describe() string {
	if o.Edits {
		return "file edits in this directory"
	}
	var parts []string
	for _, p := range o.Prefixes {
		parts = append(parts, "`"+p+" *`")
	}
	return strings.Join(parts, ", ")
}

// Reason is the asks' reasons, one per line, each after who asked.
func (q approvalQuestion) Reason() string {
	var lines []string
	for _, a := range q.Asks {
		lines = append(lines, a.By+": "+a.Reason)
	}
	return strings.Join(lines, "\n")
}

// Askers names who asked: "rules:claude-code, validator:curl".
func (q approvalQuestion) Askers() string {
	var by []string
	for _, a := range q.Asks {
		if !slices.Contains(by, a.By) {
			by = append(by, a.By)
		}
	}
	return strings.Join(by, ", ")
}

// approvalAnswer is the answer to a question. Message, with a deny, is
// for the model.
type approvalAnswer struct {
	Decision ApprovalDecision
	Message  string
	By       string // who answered, for the audit trail
	// For a plan: the mode to carry it out in ("": the first offered),
	// and the plan as the user edited it ("": as presented).
	Mode string
	Plan string
}

// approvalAsker puts a question to whoever answers and waits for the
// answer; it returns a deny when the context ends first.
type approvalAsker func(ctx context.Context, q approvalQuestion) approvalAnswer

// sessionApprovals holds the "don't ask again" answers of one session.
type sessionApprovals struct {
	cwd     string
	preview func(ToolCall) string // an edit's or write's diff; nil: none
	// split is the command line's simple commands, as words, when an
	// approval can be about each (see splitForApproval); nil: no command
	// line is, and bash calls are never offered "don't ask again".
	split func(line, cwd string) ([][]string, bool)

	// savePath is where Save keeps answers for later runs
	// (approvals_saved.go); "" where nothing is saved.
	savePath string
	// guarded names the path (absolute, symlinks resolved) programs
	// outside zot read or run that covers a file (.git, .zot, .claude,
	// .mcp.json, the rule files, what validators run), or "": "file edits
	// in this directory" never covers those. nil: nothing is.
	guarded func(real string) string

	mu       sync.Mutex
	prefixes [][]string // each a command prefix, as words
	edits    bool
	refused  approvalSet // what "never" answers refuse
	saved    [][]string  // the prefixes saved for the directory
}

// approvalSet is what answers cover: command prefixes, as words, and
// file edits inside the working directory.
type approvalSet struct {
	prefixes [][]string
	edits    bool
}

func newSessionApprovals(cwd string, preview func(ToolCall) string, split func(line, cwd string) ([][]string, bool)) *sessionApprovals {
	return &sessionApprovals{cwd: cwd, preview: preview, split: split}
}

// editsCover says whether "file edits in this directory" can cover an
// edit's or write's path: inside the working directory, and not in what
// programs outside zot read or run.
func (s *sessionApprovals) editsCover(call ToolCall) bool {
	real, ok := s.insideCwd(call)
	return ok && (s.guarded == nil || s.guarded(real) == "")
}

// Confirm makes the ConfirmFunc that answers from the session's earlier
// answers when they cover the call, and else asks.
func (s *sessionApprovals) Confirm(ask approvalAsker) ConfirmFunc {
	return func(ctx context.Context, call ToolCall, asks []GateNote) (bool, string) {
		s.mu.Lock()
		refused := approvalSet{slices.Clone(s.refused.prefixes), s.refused.edits}
		s.mu.Unlock()
		if what, ok := s.matches(call, refused); ok {
			return false, "refused earlier this session (" + what + ")"
		}
		if by, ok := s.covers(call, asks); ok {
			return true, by
		}
		q := approvalQuestion{Call: call, Asks: asks, Offer: s.offer(call, asks)}
		if s.preview != nil && (call.Name == ToolEdit || call.Name == ToolWrite) {
			q.Diff = s.preview(call)
		}
		a := ask(ctx, q)
		by := a.By
		if by == "" {
			by = "the approver"
		}
		switch a.Decision {
		case ApprovalAllow:
			return true, by
		case ApprovalAlways:
			// Where nothing was offered, always is a yes for this call
			// only: the answer cannot widen what the offer would allow.
			if q.Offer.any() {
				s.remember(q.Offer)
				return true, by + " (and not again this session for " + q.Offer.Describe() + ")"
			}
			return true, by
		case ApprovalNever:
			if q.Offer.any() {
				s.mu.Lock()
				s.refused.add(q.Offer)
				s.mu.Unlock()
				by += " (and refused without asking this session for " + q.Offer.Describe() + ")"
			}
		}
		if a.Message != "" {
			return false, by + ", who said: " + a.Message
		}
		return false, by
	}
}

// CoverOr makes the ConfirmFunc of a mode where nobody is asked: the
// session's earlier (and saved) answers where they cover the call, else
// next.
func (s *sessionApprovals) CoverOr(next ConfirmFunc) ConfirmFunc {
	return func(ctx context.Context, call ToolCall, asks []GateNote) (bool, string) {
		if by, ok := s.covers(call, asks); ok {
			return true, by
		}
		return next(ctx, call, asks)
	}
}

// allowCanEnd says whether an allow ends every ask: each came from a
// default, not from a rule, validator, hook or extension that asks.
func allowCanEnd(asks []GateNote) bool {
	for _, a := range asks {
		if !a.AllowEnds {
			return false
		}
	}
	return len(asks) > 0
}

// offer is what "don't ask again" may allow for call, given who asked.
func (s *sessionApprovals) offer(call ToolCall, asks []GateNote) approvalOffer {
	if !allowCanEnd(asks) {
		return approvalOffer{}
	}
	switch call.Name {
	case ToolBash:
		prefixes, ok := s.commandPrefixes(call)
		if !ok {
			return approvalOffer{}
		}
		var o approvalOffer
		for _, p := range prefixes {
			text := strings.Join(p, " ")
			if !slices.Contains(o.Prefixes, text) {
				o.Prefixes = append(o.Prefixes, text)
			}
		}
		return o
	case ToolEdit, ToolWrite:
		if s.editsCover(call) {
			return approvalOffer{Edits: true}
		}
	}
	return approvalOffer{}
}

func (s *sessionApprovals) remember(o approvalOffer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := approvalSet{s.prefixes, s.edits}
	set.add(o)
	s.prefixes, s.edits = set.prefixes, set.edits
}

func (set *approvalSet) add(o approvalOffer) {
	if o.Edits {
		set.edits = true
	}
	for _, p := range o.Prefixes {
		words := strings.Fields(p)
		if !slices.ContainsFunc(set.prefixes, func(have []string) bool { return slices.Equal(have, words) }) {
			set.prefixes = append(set.prefixes, words)
		}
	}
}

// covers says whether earlier answers allow call, and which, for the
// audit trail: every ask an allow can end, and for bash every simple
// command of the line under an allowed prefix — this session's, or
// with those saved for the directory too.
func (s *sessionApprovals) covers(call ToolCall, asks []GateNote) (by string, ok bool) {
	if !allowCanEnd(asks) {
		return "", false
	}
	s.mu.Lock()
	set := approvalSet{slices.Clone(s.prefixes), s.edits}
	saved := slices.Clone(s.saved)
	s.mu.Unlock()
	if what, ok := s.matches(call, set); ok {
		return "approved earlier this session (" + what + ")", true
	}
	if len(saved) == 0 {
		return "", false
	}
	set.prefixes = append(set.prefixes, saved...)
	if what, ok := s.matches(call, set); ok {
		return "approved earlier (" + what + "; saved for this directory)", true
	}
	return "", false
}

// matches says whether set covers call, and by what: for bash every
// simple command of the line under one of its prefixes.
func (s *sessionApprovals) matches(call ToolCall, set approvalSet) (string, bool) {
	prefixes, edits := set.prefixes, set.edits
	switch call.Name {
	case ToolBash:
		if len(prefixes) == 0 {
			return "", false
		}
		cmds, ok := s.commands(call)
		if !ok {
			return "", false
		}
		var used []string
		for _, words := range cmds {
			i := slices.IndexFunc(prefixes, func(p []string) bool {
				return len(words) >= len(p) && slices.Equal(words[:len(p)], p)
			})
			if i < 0 {
				return "", false
			}
			if text := "`" + strings.Join(prefixes[i], " ") + " *`"; !slices.Contains(used, text) {
				used = append(used, text)
			}
		}
		return strings.Join(used, ", "), true
	case ToolEdit, ToolWrite:
		if edits && s.editsCover(call) {
			return "file edits in this directory", true
		}
	}
	return "", false
}

// commands is a bash call's simple commands, as words, when an approval
// can be about each.
func (s *sessionApprovals) commands(call ToolCall) ([][]string, bool) {
	args, err := ParseBashArgs(call.Args)
	if err != nil || strings.TrimSpace(args.Command) == "" || s.split == nil {
		return nil, false
	}
	return s.split(args.Command, s.cwd)
}

// commandPrefixes is, for each simple command of a bash call, its prefix:
// the command's words up to and including the first that is not a flag
// ("go test" of go test ./...; "ls -la" of ls -la, which has none), so a
// prefix is never broader than the command name and its first non-flag
// word. A word that is not plainly literal (a $, a glob, a quote) makes
// the line one zot offers no prefix for.
func (s *sessionApprovals) commandPrefixes(call ToolCall) ([][]string, bool) {
	cmds, ok := s.commands(call)
	if !ok {
		return nil, false
	}
	var out [][]string
	for _, words := range cmds {
		n := 1
		for n < len(words) && strings.HasPrefix(words[n], "-") {
			n++
		}
		if n < len(words) {
			n++ // the first non-flag word
		}
		p := words[:n]
		for _, w := range p {
			if !plainWord(w) {
				return nil, false
			}
		}
		out = append(out, p)
	}
	return out, true
}

// plainWord is a word that reads the same to zot, to bash and in a Claude
// Code rule: no expansions, globs, quotes or the rule syntax's own : ( ).
func plainWord(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("-_./=+,@%", r):
		default:
			return false
		}
	}
	return true
}

// insideCwd says whether an edit's or write's path is inside the working
// directory, its parent directory resolved through symbolic links, so a
// link cannot carry a session's "edits here" elsewhere; real is the path
// so resolved.
func (s *sessionApprovals) insideCwd(call ToolCall) (real string, inside bool) {
	var path string
	switch call.Name {
	case ToolEdit:
		a, err := ParseEditArgs(call.Args)
		if err != nil {
			return "", false
		}
		path = a.Path
	case ToolWrite:
		a, err := ParseWriteArgs(call.Args)
		if err != nil {
			return "", false
		}
		path = a.Path
	default:
		return "", false
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(s.cwd, path)
	}
	path = filepath.Clean(path)
	root, err := filepath.EvalSymlinks(s.cwd)
	if err != nil {
		return "", false
	}
	if info, err := os.Lstat(path); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		return "", false
	}
	// The deepest directory that exists, resolved; the rest, which the
	// write would create, as it is.
	if real, err = followPath(path); err != nil {
		return "", false
	}
	rel, err := filepath.Rel(root, filepath.Dir(real))
	return real, err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
