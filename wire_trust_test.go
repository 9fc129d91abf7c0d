package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The attacker is a repository the user trusted: after the trust, a pull
// (or a command) changes the script a program runs but not its command
// line. The digest covers the named files, so the directory is untrusted
// again; a file no program names changes nothing.
func TestTrustCoversTheFilesAProgramNames(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	files := map[string]string{
		".zot/validators.json": `[{"name": "guard", "executor": "./guard.sh --strict"}]`,
		".zot/guard.sh":        "#!/bin/sh\n",
		".mcp.json":            `{"mcpServers": {"s": {"command": "node", "args": ["scripts/server.js", "--config=conf/s.json"]}}}`,
		"scripts/server.js":    "// server\n",
		"conf/s.json":          "{}\n",
		"scripts/not-named.js": "// other\n",
	}
	for rel, text := range files {
		p := filepath.Join(z.cwd, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, stderr, code := z.run("trust", "--yes"); code != 0 {
		t.Fatalf("zot trust --yes: exit %d\n%s%s", code, out, stderr)
	}
	if !projectTrusted(z.home, z.cwd) {
		t.Fatal("not trusted right after zot trust --yes")
	}
	for rel, named := range map[string]bool{
		".zot/guard.sh":        true,
		"scripts/server.js":    true,
		"conf/s.json":          true,
		"scripts/not-named.js": false,
	} {
		p := filepath.Join(z.cwd, rel)
		os.WriteFile(p, []byte(files[rel]+"# changed\n"), 0o755)
		if got := !projectTrusted(z.home, z.cwd); got != named {
			t.Errorf("%s changed: untrusted %v, want %v", rel, got, named)
		}
		os.WriteFile(p, []byte(files[rel]), 0o755)
		if !projectTrusted(z.home, z.cwd) {
			t.Errorf("%s changed back: still untrusted", rel)
		}
	}
}

// namedProjectFiles finds what a command line names inside the project,
// relative to each base, and nothing outside it.
func TestNamedProjectFiles(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	outside := t.TempDir()
	for _, rel := range []string{"a.sh", "sub/b.py", "conf.json"} {
		os.MkdirAll(filepath.Dir(filepath.Join(project, rel)), 0o755)
		os.WriteFile(filepath.Join(project, rel), nil, 0o644)
	}
	os.WriteFile(filepath.Join(outside, "secret"), nil, 0o644)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(project, "link-out"))
	os.Symlink("a.sh", filepath.Join(project, "link-in"))
	words := []string{"python3", "b.py", "./a.sh", "--config=conf.json", "-v", "link-out", "link-in", filepath.Join(outside, "secret"), "missing.sh", "sub"}
	got := namedProjectFiles(project, []string{filepath.Join(project, "sub"), project}, words)
	real, _ := filepath.EvalSymlinks(project)
	var rel []string
	for _, p := range got {
		rel = append(rel, strings.TrimPrefix(p, real+"/"))
	}
	if want := []string{"a.sh", "conf.json", "sub/b.py"}; !slices.Equal(rel, want) {
		t.Errorf("named files %v, want %v", rel, want)
	}
}

// The attacker changes the rule files of a project the user trusted (a
// command without the sandbox, a pull): the trust covers every rule
// file's whole content, so removing a deny, or adding a file that
// shadows the project's, asks again (issue 34 §3). A project that was
// never trusted is not asked about for a file that only tightens.
func TestTrustCoversTheWholeOfEveryRuleFile(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	trustNow := func(dir string) {
		t.Helper()
		entries, kinds, _ := projectPrograms(home, dir, zotOptions{}, false)
		if err := recordTrust(home, dir, entries, kinds); err != nil {
			t.Fatal(err)
		}
		if !projectTrusted(home, dir) {
			t.Fatalf("%s: not trusted right after it was", dir)
		}
	}
	write := func(path, text string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	denyOnly := t.TempDir()
	write(filepath.Join(denyOnly, "runok.yml"), "rules:\n  - deny: 'git push *'\n")
	write(filepath.Join(denyOnly, ".claude", "settings.json"), `{"permissions": {"deny": ["Bash(rm:*)"]}}`)
	if !projectTrusted(home, denyOnly) {
		t.Error("a project whose rule files only deny asks for trust before it was ever trusted")
	}

	proj := t.TempDir()
	sub := filepath.Join(proj, "sub")
	rules := "rules:\n  - allow: 'git *'\n  - deny: 'git push *'\n"
	write(filepath.Join(proj, "runok.yml"), rules)
	write(filepath.Join(sub, "notes.txt"), "x\n")
	for _, dir := range []string{proj, sub} {
		if projectTrusted(home, dir) {
			t.Fatalf("%s: trusted before the user trusted its allow rules", dir)
		}
		trustNow(dir)
	}
	write(filepath.Join(proj, "runok.yml"), "rules:\n  - allow: 'git *'\n")
	if projectTrusted(home, proj) || projectTrusted(home, sub) {
		t.Error("the deny rule was removed, and the directory is still trusted")
	}
	write(filepath.Join(proj, "runok.yml"), rules)
	if !projectTrusted(home, proj) || !projectTrusted(home, sub) {
		t.Error("the file is back as trusted, and the directory is not")
	}
	write(filepath.Join(sub, "runok.yml"), "rules: []\n")
	if projectTrusted(home, sub) {
		t.Error("a new runok.yml shadows the trusted one, and the directory is still trusted")
	}
	os.Remove(filepath.Join(sub, "runok.yml"))
	write(filepath.Join(proj, ".claude", "settings.local.json"), `{"permissions": {"deny": []}}`)
	if projectTrusted(home, proj) {
		t.Error("a new .claude/settings.local.json, and the directory is still trusted")
	}
}

// Trust covers an HTTP server's "oauth" object — where the login goes,
// which secret goes there — and an entry without one keeps the digest it
// had before OAuth existed, so that no trusted directory asks again.
func TestTrustCoversAnHTTPServersOAuth(t *testing.T) {
	t.Parallel()
	digest := func(entry string) string {
		c, err := parseMCPEntry("web", json.RawMessage(entry), nil)
		if err != nil {
			t.Fatal(err)
		}
		return mcpTrustEntry(c, "/project").Content
	}
	plain := digest(`{"url": "https://mcp.example.com/mcp"}`)
	if plain != sha256Hex([]byte("https://mcp.example.com/mcp")) {
		t.Errorf("an entry without oauth changed its digest")
	}
	a := digest(`{"url": "https://mcp.example.com/mcp", "oauth": {"authServerMetadataUrl": "https://as.example.com/.well-known/oauth-authorization-server"}}`)
	b := digest(`{"url": "https://mcp.example.com/mcp", "oauth": {"authServerMetadataUrl": "https://evil.example.com/.well-known/oauth-authorization-server"}}`)
	if a == plain || a == b {
		t.Errorf("the oauth object is not covered: %s %s %s", plain, a, b)
	}
}
