package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestYAMLDocumentReadsARunokConfig(t *testing.T) {
	t.Parallel()
	doc := `# yaml-language-server: $schema=https://example.com/runok.schema.json
---
extends:
  - ./base.yml   # a comment
defaults: { action: ask, sandbox: strict }
definitions:
  paths:
    secrets: [~/.ssh, '~/.gnupg']
  vars:
    runok:
      values:
        - runok
        - 'cargo run --'
        - type: path
          value: target/debug/runok
  wrappers:
    - "find * -exec|-execdir <cmd> \\;|+"
rules:
  - allow: 'git *'
  - deny: git push -f|--force *
    message: >-
      Force push is
      not allowed.
    fix_suggestion: "git push --force-with-lease"
...
ignored: after the end of the document
`
	n, err := parseYAMLDocument("runok.yml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"extends":  []any{"./base.yml"},
		"defaults": map[string]any{"action": "ask", "sandbox": "strict"},
		"definitions": map[string]any{
			"paths": map[string]any{"secrets": []any{"~/.ssh", "~/.gnupg"}},
			"vars": map[string]any{"runok": map[string]any{"values": []any{"runok", "cargo run --",
				map[string]any{"type": "path", "value": "target/debug/runok"}}}},
			"wrappers": []any{`find * -exec|-execdir <cmd> \;|+`},
		},
		"rules": []any{
			map[string]any{"allow": "git *"},
			map[string]any{"deny": "git push -f|--force *", "message": "Force push is not allowed.", "fix_suggestion": "git push --force-with-lease"},
		},
	}
	if got := n.value(); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
	rules := n.Map["rules"]
	if rules.Line != 19 || rules.List[1].Line != 20 || rules.List[1].KeyLine["fix_suggestion"] != 24 || n.KeyLine["definitions"] != 6 {
		t.Errorf("lines: rules %d, rule 2 %d, fix_suggestion %d, definitions %d", rules.Line, rules.List[1].Line, rules.List[1].KeyLine["fix_suggestion"], n.KeyLine["definitions"])
	}
	if got := strings.Join(n.Keys, ","); got != "extends,defaults,definitions,rules" {
		t.Errorf("keys in order: %s", got)
	}
}

func TestYAMLDocumentErrorsNameFileAndLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, doc, want string }{
		{"list at the top", "- allow: x\n", `runok.yml:1: want a map of keys at the top`},
		{"tab indentation", "rules:\n\t- allow: x\n", "runok.yml:2: a tab in the indentation"},
		{"bad escape", "rules:\n  - deny: \"find \\; x\"\n", `runok.yml:2: unknown escape \;`},
		{"unclosed quote", "rules:\n  - allow: 'git *\nother: x\n", "runok.yml:2: the quoted text opened here is never closed"},
		{"unclosed flow map", "defaults: {action: ask\nrules: []\n", "runok.yml:1: the { map opened here is never closed"},
		{"flow map without colon", "defaults: {ask}\n", "runok.yml:1: flow map entry ask is not"},
		{"duplicate key", "rules: []\nrules: []\n", `runok.yml:2: key "rules" appears twice`},
		{"second document", "rules: []\n---\nrules: []\n", "runok.yml:2: a second document"},
		{"bad indentation", "rules:\n  - allow: x\n   deny: y\n", "runok.yml:3: unexpected indentation"},
		{"not utf-8", "rules:\n  - allow: \xff\n", "runok.yml:2: not UTF-8"},
		{"deep nesting", "a:" + strings.Repeat(" [", 40) + strings.Repeat("]", 40) + "\n", "runok.yml:1: nested more than"},
	} {
		_, err := parseYAMLDocument("runok.yml", []byte(tc.doc))
		var ye *yamlError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ye) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestYAMLDocumentOfCommentsIsEmpty(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"", "# nothing\n\n", "---\n", "---\n# x\n...\n"} {
		n, err := parseYAMLDocument("x.yml", []byte(doc))
		if err != nil || n.Kind != yamlMap || len(n.Keys) != 0 {
			t.Errorf("%q: %v %+v", doc, err, n)
		}
	}
}

// Front matter keeps reading {…} as text, as skills always have.
func TestFrontMatterKeepsFlowMapsAsText(t *testing.T) {
	t.Parallel()
	m, _, err := parseFrontMatter([]string{"name: x", "meta: {a: b}"}, 2)
	if err != nil || m["meta"] != "{a: b}" {
		t.Errorf("%v %#v", err, m)
	}
}

// FuzzYAMLDocument: no input panics or hangs the reader, and an error
// always names a line of the file.
func FuzzYAMLDocument(f *testing.F) {
	for _, seed := range []string{
		"rules:\n  - allow: 'git *'\n  - deny: \"rm -rf /\"\n    message: no\n",
		"definitions:\n  vars:\n    x:\n      values: [a, 'b c', {type: path, value: d}]\n",
		"a: |+\n  x\n\nb: >-\n  y\n  z\n",
		"---\nk: [a, [b, {c: d}]]\n...\n",
		"- a\n", "k: 'unterminated\n", "k: {\n", "\t", "a:\n  - - - x\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		_, err := parseYAMLDocument("f.yml", []byte(doc))
		var ye *yamlError
		if err != nil && (!errors.As(err, &ye) || ye.line < 1 || ye.line > strings.Count(doc, "\n")+2 || ye.path != "f.yml") {
			t.Errorf("%q: error without a line of the file: %v", doc, err)
		}
	})
}
