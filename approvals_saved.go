package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
)

// Saved approvals (issue 34 §11): a "don't ask again" the user keeps for
// a project directory. What is saved is what the question showed — a
// command prefix as words, `rm -rf build/ *` — and it is matched word for
// word, as the session's answers are (sessionApprovals.covers): rm -rf
// build/../../home is not under it. A Claude Code rule cannot say that
// (Bash(rm -rf build/:*) is a prefix of characters), so zot keeps these in
// a file of its own, the user's: $ZOT_HOME/approvals.json, keyed by the
// directory. Nothing in the project changes, so neither does the
// directory's trust, and the answer applies whether the project is trusted
// or not.
//
//	{"projects": {"/home/me/src/app": {"commands": [["go", "test"], ["rm", "-rf", "build/"]]}}}

const savedApprovalsLimit = 1 << 20

func savedApprovalsPath(home string) string { return filepath.Join(home, "approvals.json") }

type savedApprovalsFile struct {
	Projects map[string]*savedProject `json:"projects"`
}

type savedProject struct {
	// Commands are command prefixes, as words: each allows a command whose
	// words start with them, where an allow can end the question.
	Commands [][]string `json:"commands"`
}

// savedApprovalsKey is the directory as the file names it: absolute,
// through its symbolic links.
func savedApprovalsKey(dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return filepath.Clean(dir)
}

// readSavedApprovals is the prefixes saved for dir. A file that cannot be
// read is an error and none of it applies; an entry that is not a prefix
// zot would have offered is skipped and reported.
func readSavedApprovals(path, dir string) (prefixes [][]string, problems []string) {
	f, err := readSavedApprovalsFile(path)
	if err != nil {
		return nil, []string{fmt.Sprintf("%v; no saved \"don't ask again\" answer applies", err)}
	}
	p := f.Projects[savedApprovalsKey(dir)]
	if p == nil {
		return nil, nil
	}
	for i, words := range p.Commands {
		if len(words) == 0 || slices.ContainsFunc(words, func(w string) bool { return !plainWord(w) }) {
			problems = append(problems, fmt.Sprintf("%s: %s: command %d is not a list of plain words; skipped", path, savedApprovalsKey(dir), i+1))
			continue
		}
		prefixes = append(prefixes, words)
	}
	return prefixes, problems
}

func readSavedApprovalsFile(path string) (savedApprovalsFile, error) {
	var f savedApprovalsFile
	data, err := readUntrustedFile(path, savedApprovalsLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, fmt.Errorf("%s: not {\"projects\": {…}}: %v", path, err)
	}
	return f, nil
}

// saveApprovalPrefixes adds prefixes to dir's in the file, under an
// exclusive lock on path.lock so that two zots add both; the file is
// replaced whole or not at all, mode 0600. A file that does not read is
// left as it is.
func saveApprovalPrefixes(path, dir string, prefixes [][]string) error {
	return underLock(path+".lock", func() error { return addApprovalPrefixes(path, dir, prefixes) })
}

func addApprovalPrefixes(path, dir string, prefixes [][]string) error {
	f, err := readSavedApprovalsFile(path)
	if err != nil {
		return fmt.Errorf("%v; not changed", err)
	}
	if f.Projects == nil {
		f.Projects = map[string]*savedProject{}
	}
	key := savedApprovalsKey(dir)
	p := f.Projects[key]
	if p == nil {
		p = &savedProject{}
		f.Projects[key] = p
	}
	for _, words := range prefixes {
		if !slices.ContainsFunc(p.Commands, func(have []string) bool { return slices.Equal(have, words) }) {
			p.Commands = append(p.Commands, words)
		}
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(data, '\n'), 0o600)
}

// withSaved makes the session's answers start from those saved for its
// directory in path, and Save add to them there.
func (s *sessionApprovals) withSaved(path string, prefixes [][]string) *sessionApprovals {
	s.savePath = path
	s.saved = append(s.saved, prefixes...)
	return s
}

// Save keeps what the offer allows for this directory in later runs too,
// and for the rest of this one. File edits are never saved.
func (s *sessionApprovals) Save(o approvalOffer) (where string, err error) {
	if s == nil || s.savePath == "" {
		return "", errors.New("this session has nowhere to save it")
	}
	var prefixes [][]string
	for _, p := range o.Prefixes {
		prefixes = append(prefixes, strings.Fields(p))
	}
	if err := saveApprovalPrefixes(s.savePath, s.cwd, prefixes); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range prefixes {
		if !slices.ContainsFunc(s.saved, func(have []string) bool { return slices.Equal(have, p) }) {
			s.saved = append(s.saved, p)
		}
	}
	return s.savePath, nil
}

// Answers lists what the answers cover now, one line each: what runs
// without asking this session, what is saved for the directory (and
// where), and what is refused without asking.
func (s *sessionApprovals) Answers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	quote := func(p []string) string { return "`" + strings.Join(p, " ") + " *`" }
	var out []string
	for _, p := range s.saved {
		out = append(out, "allow "+quote(p)+" (saved for this directory in "+s.savePath+")")
	}
	for _, p := range s.prefixes {
		out = append(out, "allow "+quote(p)+" (this session)")
	}
	if s.edits {
		out = append(out, "allow file edits in this directory (this session)")
	}
	for _, p := range s.refused.prefixes {
		out = append(out, "deny "+quote(p)+" (this session)")
	}
	if s.refused.edits {
		out = append(out, "deny file edits in this directory (this session)")
	}
	return out
}
