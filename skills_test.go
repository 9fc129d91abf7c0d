package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// skillFM wraps front-matter lines into a SKILL.md with a body.
func skillFM(lines ...string) string {
	return "---\n" + strings.Join(lines, "\n") + "\n---\n\n# Body\n\nDo the thing.\n"
}

func TestSkillFrontMatter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		file  string
		check func(t *testing.T, s Skill)
	}{
		{"minimal", skillFM("name: demo", "description: Does a demo."), func(t *testing.T, s Skill) {
			if s.Name != "demo" || s.Description != "Does a demo." || s.Body != "# Body\n\nDo the thing." {
				t.Errorf("%+v", s)
			}
			if s.Meta != nil || s.AllowedTools != nil || s.UserOnly {
				t.Errorf("extras %+v", s)
			}
		}},
		{"quoted strings and comments", skillFM(
			"# a comment line",
			`name: "demo" # trailing comment`,
			`description: 'It''s "quoted": a # is not a comment here'`,
			`motto: "tab\there, \"q\", \u00e9, \x41, back\\slash"`,
			`url: https://example.com/a#frag`,
		), func(t *testing.T, s Skill) {
			if s.Name != "demo" || s.Description != `It's "quoted": a # is not a comment here` {
				t.Errorf("%q %q", s.Name, s.Description)
			}
			if got := s.Meta["motto"]; got != "tab\there, \"q\", é, A, back\\slash" {
				t.Errorf("motto = %q", got)
			}
			if got := s.Meta["url"]; got != "https://example.com/a#frag" {
				t.Errorf("url = %q", got)
			}
		}},
		{"colon in a plain description", skillFM("name: demo", "description: Use when: the user asks"), func(t *testing.T, s Skill) {
			if s.Description != "Use when: the user asks" {
				t.Errorf("%q", s.Description)
			}
		}},
		{"inline list", skillFM("name: demo", "description: d", `allowed-tools: [Read, "Bash(git diff:*)", 'Grep',]`), func(t *testing.T, s Skill) {
			if want := []string{"Read", "Bash(git diff:*)", "Grep"}; !reflect.DeepEqual(s.AllowedTools, want) {
				t.Errorf("%q", s.AllowedTools)
			}
		}},
		{"inline list over lines", skillFM("name: demo", "description: d", `allowed-tools:`, `  ["Read", "Write",`, `   "Edit"]`), func(t *testing.T, s Skill) {
			if want := []string{"Read", "Write", "Edit"}; !reflect.DeepEqual(s.AllowedTools, want) {
				t.Errorf("%q", s.AllowedTools)
			}
		}},
		{"block list indented", skillFM("name: demo", "description: d", "allowed-tools:", "  - Read", "  # comment", "  - 'Bash(ls:*)'", "", "  - Write # why"), func(t *testing.T, s Skill) {
			if want := []string{"Read", "Bash(ls:*)", "Write"}; !reflect.DeepEqual(s.AllowedTools, want) {
				t.Errorf("%q", s.AllowedTools)
			}
		}},
		{"block list at the key's indentation", skillFM("allowed-tools:", "- Read", "- Grep", "name: demo", "description: d"), func(t *testing.T, s Skill) {
			if want := []string{"Read", "Grep"}; !reflect.DeepEqual(s.AllowedTools, want) || s.Name != "demo" {
				t.Errorf("%+v", s)
			}
		}},
		{"allowed-tools as text", skillFM("name: demo", "description: d", "allowed-tools: Read, Grep, Bash(git log, git diff:*)"), func(t *testing.T, s Skill) {
			if want := []string{"Read", "Grep", "Bash(git log, git diff:*)"}; !reflect.DeepEqual(s.AllowedTools, want) {
				t.Errorf("%q", s.AllowedTools)
			}
		}},
		{"allowed-tools separated by spaces", skillFM("name: demo", "description: d", `allowed-tools: "Bash(python:*) WebFetch  Read"`), func(t *testing.T, s Skill) {
			if want := []string{"Bash(python:*)", "WebFetch", "Read"}; !reflect.DeepEqual(s.AllowedTools, want) {
				t.Errorf("%q", s.AllowedTools)
			}
		}},
		{"folded description", skillFM("name: demo", "description: >-", "  Converts one spec", "  to vitest.", "", "  Second paragraph.", "license: MIT"), func(t *testing.T, s Skill) {
			if s.Description != "Converts one spec to vitest.\nSecond paragraph." || s.Meta["license"] != "MIT" {
				t.Errorf("%q %v", s.Description, s.Meta)
			}
		}},
		{"folded keeps more-indented lines", skillFM("name: demo", "description: d", "text: >", "  a", "  b", "    code", "  c"), func(t *testing.T, s Skill) {
			if got := s.Meta["text"]; got != "a b\n  code\nc\n" {
				t.Errorf("%q", got)
			}
		}},
		{"literal description", skillFM("name: demo", "description: |", "  Line one.", "    indented: yes # not a comment", "", "  Line three.", "", "next: x"), func(t *testing.T, s Skill) {
			if s.Description != "Line one.\n  indented: yes # not a comment\n\nLine three." || s.Meta["next"] != "x" {
				t.Errorf("%q %v", s.Description, s.Meta)
			}
		}},
		{"block scalar chomping and indicator", skillFM("name: demo", "description: d", "keep: |+", "  k", "", "strip: |-", "  s", "", "clip: |", "  c", "", "", "ind: |2", "    four", "  two", "empty: |", "last: x"), func(t *testing.T, s Skill) {
			want := map[string]any{"keep": "k\n\n", "strip": "s", "clip": "c\n", "ind": "  four\ntwo\n", "empty": "", "last": "x"}
			if !reflect.DeepEqual(s.Meta, want) {
				t.Errorf("%#v", s.Meta)
			}
		}},
		{"plain scalar over lines", skillFM("name: demo", "description: Helps with", "  long tasks", "  that span lines.", "other: x"), func(t *testing.T, s Skill) {
			if s.Description != "Helps with long tasks that span lines." {
				t.Errorf("%q", s.Description)
			}
		}},
		{"value on the next line", skillFM("name: demo", "description:", `  "Quoted, on its own line,`, `  continued."`), func(t *testing.T, s Skill) {
			if s.Description != "Quoted, on its own line, continued." {
				t.Errorf("%q", s.Description)
			}
		}},
		{"nested map and list of maps", skillFM("name: demo", "description: d", "metadata:", "  author: me", "  tags: [a, b]", "  nested:", "    deep: 1", "steps:", "  - run: make", "    why: build", "  - plain", "  - - inner"), func(t *testing.T, s Skill) {
			want := map[string]any{
				"metadata": map[string]any{"author": "me", "tags": []any{"a", "b"}, "nested": map[string]any{"deep": "1"}},
				"steps":    []any{map[string]any{"run": "make", "why": "build"}, "plain", []any{"inner"}},
			}
			if !reflect.DeepEqual(s.Meta, want) {
				t.Errorf("%#v", s.Meta)
			}
		}},
		{"unknown keys kept as written", skillFM("name: demo", "description: d", "version: 1.0", "user-invocable: false", "argument-hint: [--slug task-slug]", "ref: &a {x: 1}"), func(t *testing.T, s Skill) {
			want := map[string]any{"version": "1.0", "user-invocable": "false", "argument-hint": []any{"--slug task-slug"}, "ref": "&a {x: 1}"}
			if !reflect.DeepEqual(s.Meta, want) {
				t.Errorf("%#v", s.Meta)
			}
		}},
		{"user only", skillFM("name: demo", "description: d", "disable-model-invocation: true"), func(t *testing.T, s Skill) {
			if !s.UserOnly || s.Meta["disable-model-invocation"] != "true" {
				t.Errorf("%+v", s)
			}
		}},
		{"CRLF, BOM and trailing spaces on the fences", "\uFEFF--- \r\nname: demo\r\ndescription: d\r\n---  \r\nbody\r\n", func(t *testing.T, s Skill) {
			if s.Name != "demo" || s.Body != "body" {
				t.Errorf("%+v", s)
			}
		}},
		{"empty body", "---\nname: demo\ndescription: d\n---", func(t *testing.T, s Skill) {
			if s.Body != "" {
				t.Errorf("%q", s.Body)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parseSkill("x/SKILL.md", []byte(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

func TestSkillFrontMatterMalformed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		want string // the whole "path:line: message" prefix
	}{
		{"no front matter", "# Just markdown\n", "x/SKILL.md:1: no front matter"},
		{"unterminated", "---\nname: demo\ndescription: d\n\nbody\n", "x/SKILL.md:1: the front matter opened here is never closed"},
		{"missing name", skillFM("description: d"), `x/SKILL.md:1: the front matter has no "name"`},
		{"missing description", skillFM("name: demo"), `x/SKILL.md:1: the front matter has no "description"`},
		{"empty name", skillFM("name:", "description: d"), `x/SKILL.md:2: "name" is empty`},
		{"name is a list", skillFM("description: d", "name: [a, b]"), `x/SKILL.md:3: "name" must be text`},
		{"name on two lines", skillFM("name: |", "  a", "  b", "description: d"), `x/SKILL.md:2: name "a\nb" must be one line`},
		{"name too long", skillFM("name: "+strings.Repeat("n", 65), "description: d"), "x/SKILL.md:2: name"},
		{"key under a scalar", skillFM("name: demo", "  description: d"), `x/SKILL.md:3: bad indentation: "description: d" is indented`},
		{"unexpected indentation", skillFM("name: demo", "description: d", "metadata:", "    a: 1", "  b: 2"), "x/SKILL.md:6: unexpected indentation (2 spaces where 0 were expected)"},
		{"tab indentation", skillFM("name: demo", "description: d", "metadata:", "\tauthor: me"), "x/SKILL.md:5: a tab in the indentation"},
		{"tab before a list item", skillFM("name: demo", "description: d", "tools:", "  - a", "\t- b"), "x/SKILL.md:6: a tab in the indentation"},
		{"no colon", skillFM("name: demo", "description: d", "just words"), `x/SKILL.md:4: expected "key: value", found "just words"`},
		{"list at top level", skillFM("- name: demo"), "x/SKILL.md:2: a list item where a key was expected"},
		{"duplicate key", skillFM("name: demo", "description: d", "name: again"), `x/SKILL.md:4: key "name" appears twice`},
		{"unterminated quote", skillFM("name: demo", `description: "never closed`, "license: MIT"), "x/SKILL.md:3: the quoted text opened here is never closed"},
		{"text after the quote", skillFM(`name: "demo" extra`, "description: d"), `x/SKILL.md:2: unexpected "extra" after the closing quote`},
		{"bad escape", skillFM(`name: "de\qmo"`, "description: d"), `x/SKILL.md:2: unknown escape \q`},
		{"short hex escape", skillFM(`name: "\u12"`, "description: d"), `x/SKILL.md:2: escape \u needs 4 hex digits`},
		{"unterminated flow list", skillFM("name: demo", "description: d", "tools: [a, b", "license: MIT"), "x/SKILL.md:4: the [ list opened here is never closed"},
		{"text after a flow list", skillFM("name: demo", "description: d", "tools: [a] b"), `x/SKILL.md:4: unexpected "b" after the closing ]`},
		{"bad block header", skillFM("name: demo", "description: |x", "  d"), `x/SKILL.md:3: bad block scalar header "|x"`},
		{"allowed-tools as a map", skillFM("name: demo", "description: d", "allowed-tools:", "  read: yes"), `x/SKILL.md:4: "allowed-tools" must be a list`},
		{"nested too deep", skillFM("name: demo", "description: d", "x:", strings.Repeat("- ", 40)+"a"), "x/SKILL.md:5: nested more than 32 levels deep"},
		{"not UTF-8", "---\nname: demo\ndescription: caf\xe9\n---\n", "x/SKILL.md:3: not UTF-8 text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseSkill("x/SKILL.md", []byte(tt.file))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error = %v\nwant prefix %q", err, tt.want)
			}
		})
	}
}

// TestSkillFixturesLikeRealFiles loads testdata/skills, files shaped like
// the skills people publish, and compares everything zot makes of them.
func TestSkillFixturesLikeRealFiles(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	skills := loadSkillRoot(skillRoot{dir: "testdata/skills", label: "fixtures"}, func(f string, a ...any) {
		fmt.Fprintf(&b, "log: "+f+"\n", a...)
	})
	for _, s := range skills {
		meta, _ := json.Marshal(s.Meta)
		fmt.Fprintf(&b, "%s (%s, %s) user-only=%v\n  description: %q\n  allowed-tools: %q\n  meta: %s\n  body: %q\n",
			s.Name, s.Source, s.Dir, s.UserOnly, s.Description, s.AllowedTools, meta, s.Body)
	}
	files, more := skillFiles(context.Background(), "testdata/skills/pdf-forms")
	fmt.Fprintf(&b, "files beside pdf-forms: %q more=%v\n", files, more)
	b.WriteString(SkillManifest(skills))

	want := `log: skipped skill testdata/skills/broken-tab/SKILL.md:5: a tab in the indentation; indent with spaces only
log: skipped skill testdata/skills/no-name/SKILL.md:1: the front matter has no "name"; add a line name: …
commit-style (fixtures, testdata/skills/commit-style) user-only=true
  description: "How this team writes commit messages.\nRead before writing one."
  allowed-tools: ["Bash(git log:*)" "Bash(git diff:*)"]
  meta: {"argument-hint":["message"],"disable-model-invocation":"true"}
  body: "Subject in the imperative, at most 50 characters; body wrapped at 72."
pdf-forms (fixtures, testdata/skills/pdf-forms) user-only=false
  description: "Fill in PDF forms from data the user gives. Use when the user mentions a PDF form, fields to fill, or a template to complete."
  allowed-tools: ["Bash(python3:*)" "Read" "Write"]
  meta: {"license":"Apache-2.0","metadata":{"author":"example","requires":{"python":"\u003e=3.10"},"tags":["pdf","forms"],"version":"1.2"}}
  body: "# Filling PDF forms\n\n1. List the fields: ` + "`python3 scripts/fill.py --list FORM.pdf`" + `.\n2. Ask the user for any value you do not have; see reference.md for field types.\n3. Fill: ` + "`python3 scripts/fill.py FORM.pdf values.json out.pdf`" + `."
files beside pdf-forms: ["reference.md" "scripts/fill.py"] more=false
Skills are instructions for particular kinds of task. When a task matches one of these descriptions, call the skill tool with its name before you start, and follow what it returns.
- pdf-forms: Fill in PDF forms from data the user gives. Use when the user mentions a PDF form, fields to fill, or a template to complete.`
	if got := b.String(); got != want {
		t.Errorf("got\n%s\n\nwant\n%s", got, want)
	}
}

// writeSkill makes <root>/<dir>/SKILL.md.
func writeSkill(t *testing.T, root, dir, content string) string {
	t.Helper()
	d := filepath.Join(root, dir)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "SKILL.md"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}

// skillDirs is a private HOME, ZOT_HOME and cwd, with the six search roots
// in precedence order.
func skillDirs(t *testing.T) (home, zhome, cwd string, roots []string) {
	home, zhome, cwd = t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	return home, zhome, cwd, []string{
		filepath.Join(cwd, ".zot", "skills"),
		filepath.Join(zhome, "skills"),
		filepath.Join(cwd, ".claude", "skills"),
		filepath.Join(home, ".claude", "skills"),
		filepath.Join(cwd, ".agents", "skills"),
		filepath.Join(home, ".agents", "skills"),
	}
}

func skillNamed(skills []Skill, name string) (Skill, bool) {
	for _, s := range skills {
		if s.Name == name {
			return s, true
		}
	}
	return Skill{}, false
}

// TestSkillDiscoveryOrderAndShadowing is not parallel: skill discovery finds
// the user's directories through $HOME, which skillDirs sets.
func TestSkillDiscoveryOrderAndShadowing(t *testing.T) {
	_, zhome, cwd, roots := skillDirs(t)
	labels := []string{".zot/skills", "$ZOT_HOME/skills", ".claude/skills", "~/.claude/skills", ".agents/skills", "~/.agents/skills"}
	for i, r := range roots {
		writeSkill(t, r, "shared", skillFM("name: shared", fmt.Sprintf("description: from root %d", i)))
		writeSkill(t, r, fmt.Sprintf("only%d", i), skillFM(fmt.Sprintf("name: only-%d", i), "description: d"))
	}
	// The last root shadows the built-in skill.
	writeSkill(t, roots[5], "mine", skillFM("name: write-zot-extension", "description: my own"))

	for i := range roots {
		var logs []string
		skills := LoadSkills(zhome, cwd, func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) })
		if len(logs) != 0 {
			t.Errorf("logs: %q", logs)
		}
		s, _ := skillNamed(skills, "shared")
		if s.Description != fmt.Sprintf("from root %d", i) || s.Source != labels[i] || s.Dir != filepath.Join(roots[i], "shared") {
			t.Errorf("with roots %d.. present, shared = %+v", i, s)
		}
		if len(skills) != 6-i+2 {
			t.Errorf("with roots %d.. present, %d skills", i, len(skills))
		}
		for j := i; j < 6; j++ {
			if s, ok := skillNamed(skills, fmt.Sprintf("only-%d", j)); !ok || s.Source != labels[j] {
				t.Errorf("only-%d = %+v", j, s)
			}
		}
		if s, _ := skillNamed(skills, "write-zot-extension"); s.Description != "my own" || s.Source != "~/.agents/skills" {
			t.Errorf("built-in not shadowed: %+v", s)
		}
		for k := 1; k < len(skills); k++ {
			if skills[k-1].Name >= skills[k].Name {
				t.Errorf("not sorted: %s before %s", skills[k-1].Name, skills[k].Name)
			}
		}
		os.RemoveAll(roots[i])
	}
	// Run in the home directory, ./.claude/skills is ~/.claude/skills: it is
	// read once, so a broken file there is reported once.
	home := filepath.Dir(filepath.Dir(roots[3]))
	writeSkill(t, roots[3], "broken", "---\nname: broken\n")
	var logs []string
	LoadSkills(zhome, home, func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) })
	if len(logs) != 1 {
		t.Errorf("logs = %q", logs)
	}
	os.RemoveAll(roots[3])

	skills := LoadSkills(zhome, cwd, nil)
	if len(skills) != 1 || skills[0].Name != "write-zot-extension" || skills[0].Source != "built-in" || skills[0].Dir != "" {
		t.Errorf("with no roots: %+v", skills)
	}
}

// TestSkillDiscoveryReportsAndSkipsBadFiles is not parallel: skillDirs sets
// $HOME.
func TestSkillDiscoveryReportsAndSkipsBadFiles(t *testing.T) {
	_, zhome, cwd, roots := skillDirs(t)
	root := roots[0]
	writeSkill(t, root, "good", skillFM("name: good", "description: fine"))
	bad := writeSkill(t, root, "bad", skillFM("name: bad", "description: d", "\tx: 1"))
	writeSkill(t, root, "b-dup", skillFM("name: good2", "description: first"))
	writeSkill(t, root, "c-dup", skillFM("name: good2", "description: second"))
	writeSkill(t, root, ".hidden", skillFM("name: hidden", "description: d"))
	os.MkdirAll(filepath.Join(root, "no-skill-md"), 0o755)
	os.WriteFile(filepath.Join(root, "stray.md"), []byte("not a skill dir"), 0o644)
	os.MkdirAll(filepath.Join(root, "dir-named-skill", "SKILL.md"), 0o755)
	elsewhere := writeSkill(t, t.TempDir(), "linked", skillFM("name: linked", "description: via a symlink"))
	if err := os.Symlink(elsewhere, filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}

	var logs []string
	skills := LoadSkills(zhome, cwd, func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) })
	var names []string
	for _, s := range skills {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, " "); got != "good good2 linked write-zot-extension" {
		t.Errorf("skills = %s", got)
	}
	if s, _ := skillNamed(skills, "good2"); s.Description != "first" {
		t.Errorf("good2 = %+v", s)
	}
	want := []string{
		"skipped skill " + filepath.Join(bad, "SKILL.md") + ":4: a tab in the indentation",
		"skipped skill " + filepath.Join(root, "c-dup", "SKILL.md") + `: name "good2" is already used by ` + filepath.Join(root, "b-dup", "SKILL.md"),
		"skipped skill " + filepath.Join(root, "dir-named-skill", "SKILL.md") + ": a directory, not a regular file",
	}
	if len(logs) != len(want) {
		t.Fatalf("logs = %q", logs)
	}
	for i := range want {
		if !strings.HasPrefix(logs[i], want[i]) {
			t.Errorf("log %d = %q\nwant prefix %q", i, logs[i], want[i])
		}
	}
}

func TestSkillEmbeddedWriteZotExtension(t *testing.T) {
	t.Parallel()
	var logs []string
	skills := builtinSkills(func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) })
	if len(logs) != 0 {
		t.Fatalf("built-in skills do not parse: %q", logs)
	}
	s, ok := skillNamed(skills, "write-zot-extension")
	if !ok {
		t.Fatal("write-zot-extension is not built in")
	}
	for _, want := range []string{"zot --ext DIR", "zot ext install", "$ZOT_HOME/extensions/", "examples/extensions/", "sdk/", "hello_ack", "ready", "event_intercept_response", "modified_args", "replace_text", "clear_notes", "shutdown_ack", "250 ms", "5 s", "60 s"} {
		if !strings.Contains(s.Body, want) {
			t.Errorf("the guide does not mention %q", want)
		}
	}
	// A built-in skill is one file: the model cannot read files that are
	// only inside the binary.
	entries, _ := builtinSkillFiles.ReadDir("skills")
	for _, e := range entries {
		files, _ := builtinSkillFiles.ReadDir("skills/" + e.Name())
		if len(files) != 1 || files[0].Name() != "SKILL.md" {
			t.Errorf("built-in skill %s holds %v; want only SKILL.md", e.Name(), files)
		}
	}
}

func TestSkillToolReturnsBodyAndFiles(t *testing.T) {
	t.Parallel()
	dir := writeSkill(t, t.TempDir(), "demo", skillFM("name: demo", "description: d"))
	for _, f := range []string{"reference.md", "scripts/run.py", ".git/config", ".env", "z/deep/x.txt"} {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o644)
	}
	tool := skillTool{[]Skill{
		{Name: "demo", Description: "d", Source: ".zot/skills", Dir: dir, Body: "# Body\n\nDo the thing."},
		{Name: "inside", Description: "d", Source: "built-in", Body: "built-in body"},
		{Name: "secret", Description: "d", Source: ".zot/skills", Dir: dir, Body: "user body", UserOnly: true},
	}}
	run := func(args string) ToolResult {
		return tool.Run(context.Background(), json.RawMessage(args), nil)
	}
	text := func(r ToolResult) string { return Message{Content: r.Content}.Text() }

	r := run(`{"name":"demo"}`)
	want := fmt.Sprintf("Skill \"demo\" from %s.\nFiles beside its SKILL.md, relative to %s (read them when the instructions refer to them):\n- reference.md\n- scripts/run.py\n- z/deep/x.txt\n\n# Body\n\nDo the thing.", dir, dir)
	if r.IsError || text(r) != want || r.Details != "skill demo (.zot/skills)" {
		t.Errorf("demo: error=%v details=%q\n%s\nwant\n%s", r.IsError, r.Details, text(r), want)
	}
	// A skill directory that is a symbolic link lists the same files.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	linked := skillTool{[]Skill{{Name: "demo", Dir: link}}}
	if r := linked.Run(context.Background(), json.RawMessage(`{"name":"demo"}`), nil); !strings.Contains(text(r), "- scripts/run.py\n- z/deep/x.txt\n") {
		t.Errorf("through a link:\n%s", text(r))
	}
	// The list stops at skillMaxListFiles.
	many := t.TempDir()
	for i := 0; i <= skillMaxListFiles; i++ {
		os.WriteFile(filepath.Join(many, fmt.Sprintf("f%03d", i)), nil, 0o644)
	}
	if files, more := skillFiles(context.Background(), many); len(files) != skillMaxListFiles || !more || files[0] != "f000" {
		t.Errorf("%d files, more=%v", len(files), more)
	}
	if files, more := skillFiles(context.Background(), filepath.Join(many, "missing")); files != nil || more {
		t.Errorf("missing dir: %q %v", files, more)
	}
	if r := run(`{"name":"inside"}`); r.IsError || text(r) != "Skill \"inside\" is built into zot; it has no files on disk.\n\nbuilt-in body" {
		t.Errorf("inside: %q", text(r))
	}
	errors := map[string]string{
		`{"name":"nope"}`:   `unknown skill "nope"; the skills are: demo, inside`,
		`{"name":"secret"}`: `skill "secret" is for the user only`,
		`{}`:                `invalid arguments for skill: "name" is required`,
		`{"name":3}`:        `invalid arguments for skill: "name" must be a string`,
		`[1]`:               `invalid arguments for skill: want a JSON object`,
	}
	for args, want := range errors {
		if r := run(args); !r.IsError || !strings.HasPrefix(text(r), want) {
			t.Errorf("%s: error=%v %q", args, r.IsError, text(r))
		}
	}
	if r := (skillTool{}).Run(context.Background(), json.RawMessage(`{"name":"x"}`), nil); !strings.Contains(text(r), "there are no skills") {
		t.Errorf("empty: %q", text(r))
	}
}

func TestSkillManifest(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 300)
	m := SkillManifest([]Skill{
		{Name: "a", Description: "first\n  on two lines"},
		{Name: "hidden", Description: "x", UserOnly: true},
		{Name: "long", Description: long},
	})
	lines := strings.Split(m, "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "call the skill tool") || lines[1] != "- a: first on two lines" {
		t.Fatalf("manifest:\n%s", m)
	}
	if !strings.HasSuffix(lines[2], "…") || len([]rune(lines[2])) != len("- long: ")+skillMaxDescLen+1 {
		t.Errorf("long description not cut: %d runes", len([]rune(lines[2])))
	}
	if SkillManifest([]Skill{{Name: "hidden", Description: "x", UserOnly: true}}) != "" {
		t.Error("a manifest of user-only skills is not empty")
	}
}

func TestSkillListFormat(t *testing.T) {
	t.Parallel()
	got := FormatSkillList([]Skill{
		{Name: "demo", Description: "Demo \x1b[31mred\x1b[0m\nskill", Source: ".zot/skills"},
		{Name: "write-zot-extension", Description: strings.Repeat("long ", 30), Source: "built-in", UserOnly: true},
	})
	manifest := SkillManifest([]Skill{{Name: "demo", Description: "Demo red skill"}})
	want := "NAME                 SOURCE       DESCRIPTION\n" +
		"demo                 .zot/skills  Demo red skill\n" +
		"write-zot-extension  built-in     (user only) " + strings.Repeat("long ", 14) + "l…\n" +
		fmt.Sprintf("\n2 skills; the manifest in the system prompt costs about %d tokens (an estimate at 4 bytes a token).\n", (len(manifest)+3)/4)
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if FormatSkillList(nil) != "No skills found.\n" {
		t.Error("empty list")
	}
}

func TestSkillToolEndToEnd(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("t1", "skill", obj{"name": "demo"}),
		replayStep{Events: anthropicEvents(gen{Text: "Used the skill."})})
	z := newZotRun(t)
	dir := writeSkill(t, filepath.Join(z.cwd, ".zot", "skills"), "demo", skillFM("name: demo", "description: Demonstrates skills."))
	os.MkdirAll(filepath.Join(dir, "refs"), 0o755)
	os.WriteFile(filepath.Join(dir, "refs", "guide.md"), []byte("guide"), 0o644)

	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "use the demo skill")...)
	if code != 0 || stdout != "Used the skill.\n" {
		t.Fatalf("exit %d stdout %q stderr %s", code, stdout, stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d", len(reqs))
	}
	var first anthRequest
	json.Unmarshal(reqs[0].Body, &first)
	system := *first.System[0].Text
	for _, want := range []string{"call the skill tool", "- demo: Demonstrates skills.", "- write-zot-extension: Write a zot extension"} {
		if !strings.Contains(system, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, system)
		}
	}
	if !anthHasTool(first, "skill") {
		t.Error("the skill tool is not offered")
	}
	var second anthRequest
	json.Unmarshal(reqs[1].Body, &second)
	last := second.Messages[len(second.Messages)-1].Content[0]
	result := *last.Content[0].Text
	if last.ToolUseID != "t1" || last.IsError || !strings.Contains(result, "# Body\n\nDo the thing.") || !strings.Contains(result, "- refs/guide.md") {
		t.Errorf("tool result (error=%v):\n%s", last.IsError, result)
	}
}

func anthHasTool(r anthRequest, name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func TestSkillsOffWithNoSkillsOrToolFilter(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	for _, args := range [][]string{{"--no-skills"}, {"--tools", "read,bash"}, {"--no-tools"}} {
		z := newZotRun(t)
		writeSkill(t, filepath.Join(z.cwd, ".zot", "skills"), "bad", skillFM("name: bad"))
		_, stderr, code := z.run(append(append(anthropicFlags(srv), args...), "-p", "hi")...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, stderr)
		}
		// --no-skills does not even read the files.
		if reported := strings.Contains(stderr, "skipped skill"); reported == (args[0] == "--no-skills") {
			t.Errorf("%v: stderr %q", args, stderr)
		}
		reqs := srv.Requests()
		var body anthRequest
		json.Unmarshal(reqs[len(reqs)-1].Body, &body)
		if anthHasTool(body, "skill") || strings.Contains(*body.System[0].Text, "write-zot-extension") {
			t.Errorf("%v: skills still offered:\n%s", args, *body.System[0].Text)
		}
	}
}

func TestSkillsCommand(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	writeSkill(t, filepath.Join(z.cwd, ".claude", "skills"), "demo", skillFM("name: demo", "description: Demonstrates \x1b]0;title\x07skills.", "allowed-tools: Read, Bash(git diff:*)"))
	bad := writeSkill(t, filepath.Join(z.home, "skills"), "broken", "---\nname: broken\n")
	other := t.TempDir()
	writeSkill(t, filepath.Join(other, ".agents", "skills"), "elsewhere", skillFM("name: elsewhere", "description: d"))

	stdout, stderr, code := z.run("skills", "list")
	if code != 0 {
		t.Fatalf("list: exit %d %s", code, stderr)
	}
	for _, want := range []string{"demo                 .claude/skills  Demonstrates ␛skills.\n", "write-zot-extension  built-in", "2 skills; the manifest in the system prompt costs about", "(an estimate at 4 bytes a token)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("list lacks %q:\n%s", want, stdout)
		}
	}
	if strings.ContainsAny(stdout, "\x1b\x07") {
		t.Errorf("control characters reach the terminal: %q", stdout)
	}
	if want := "zot: skipped skill " + filepath.Join(bad, "SKILL.md") + ":1: the front matter opened here is never closed"; !strings.Contains(stderr, want) {
		t.Errorf("list stderr %q lacks %q", stderr, want)
	}
	if stdout, _, _ := z.run("skills", "list", "--cwd", other); !strings.Contains(stdout, "elsewhere") || strings.Contains(stdout, "demo") {
		t.Errorf("--cwd ignored:\n%s", stdout)
	}

	stdout, stderr, code = z.run("skills", "show", "demo")
	if code != 0 || stdout != "# Body\n\nDo the thing.\n" || !strings.HasSuffix(stderr, "\nallowed-tools: Read, Bash(git diff:*) (not enforced by zot)\n") {
		t.Errorf("show: exit %d %q, stderr %q", code, stdout, stderr)
	}
	if stdout, _, code := z.run("skills", "show", "write-zot-extension"); code != 0 || !strings.HasPrefix(stdout, "# Writing a zot extension") {
		t.Errorf("show built-in: exit %d %q", code, truncate(stdout, 80))
	}
	if stdout, _, code := z.run("skills", "--help"); code != 0 || !strings.Contains(stdout, "zot skills show NAME") {
		t.Errorf("--help: exit %d %q", code, stdout)
	}
	failures := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"skills", "show", "nope"}, 1, `zot: no skill named "nope" (zot skills list shows them)`},
		{[]string{"skills"}, 2, "Usage:"},
		{[]string{"skills", "frob"}, 2, "zot skills: unknown command \"frob\"\nzot skills — "},
		{[]string{"skills", "show"}, 2, "zot skills show: NAME is missing"},
		{[]string{"skills", "list", "--frob"}, 2, "zot skills: unknown flag --frob"},
		{[]string{"skills", "list", "--cwd"}, 2, "--cwd needs a value"},
		{[]string{"skills", "list", "--cwd", filepath.Join(other, "missing")}, 2, "is not a directory"},
	}
	for _, f := range failures {
		if _, stderr, code := z.run(f.args...); code != f.code || !strings.Contains(stderr, f.stderr) {
			t.Errorf("%v: exit %d stderr %q; want %d with %q", f.args, code, stderr, f.code, f.stderr)
		}
	}
}

func FuzzSkillFrontMatter(f *testing.F) {
	seeds := []string{
		skillFM("name: demo", "description: d"),
		skillFM("name: \"q\\u00e9\"", "description: 'it''s'", "allowed-tools: [a, \"b\", [c]]"),
		skillFM("name: demo", "description: >-", "  folded", "", "  more", "keep: |+2", "   x", ""),
		skillFM("name: demo", "description: d", "m:", "  - a: 1", "    b: [x,", "      y]", "  - - z", "- top"),
		skillFM("name: demo", "description: plain", "  continued # c", "", "  after blank"),
		"---\nname: x\n\tdescription: y\n---\n",
		"---\r\nname: 'un\r\n",
		"---\nname: [\n",
		"---\na: |\n\n\n---\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	fixtures, _ := filepath.Glob("testdata/skills/*/SKILL.md")
	for _, path := range fixtures {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseSkill("f/SKILL.md", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f/SKILL.md:") {
				t.Fatalf("error without its place: %v", err)
			}
			return
		}
		if s.Name == "" || s.Description == "" || strings.ContainsAny(s.Name, "\n\r\x00") {
			t.Fatalf("accepted a bad skill: %+v", s)
		}
	})
}

// BenchmarkSkillParse parses the built-in guide, and a long quoted value
// spread over many lines, which must stay linear.
func BenchmarkSkillParse(b *testing.B) {
	guide, _ := builtinSkillFiles.ReadFile("skills/write-zot-extension/SKILL.md")
	long := []byte(skillFM("name: demo", "description: \"start"+strings.Repeat("\n  more words", 20000)+"\""))
	for _, in := range []struct {
		name string
		data []byte
	}{{"guide", guide}, {"long-quoted", long}} {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			for i := 0; i < b.N; i++ {
				if _, err := parseSkill("b", in.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
