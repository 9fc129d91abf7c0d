package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The smaller list of issue 38, each through the real binary.

func TestTrustSaysWhatItDidWithoutNoise(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	layTrustFixture(t, z.cwd) // .mcp.json, and no .zot/mcp.json
	stdout, stderr, code := z.run("trust", "--yes")
	if code != 0 || strings.Contains(stderr, "mcp.json") || strings.Contains(stderr, "no such file") {
		t.Errorf("zot trust --yes with no .zot/mcp.json: exit %d\n%s%s", code, stdout, stderr)
	}
	dir, err := filepath.EvalSymlinks(z.cwd)
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = z.run("trust", "--revoke")
	if code != 0 || !strings.Contains(stdout, "revoked: "+dir+" runs none") {
		t.Errorf("zot trust --revoke should name %s: exit %d\n%s%s", dir, code, stdout, stderr)
	}
	stdout, _, _ = z.run("trust", "--revoke", ".")
	if !strings.HasPrefix(stdout, dir+" was not trusted") {
		t.Errorf("zot trust --revoke . again:\n%s", stdout)
	}
}

func TestBadToolsIsAUsageErrorBeforeAMissingKey(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	_, stderr, code := z.run("-p", "--tools", "frob", "hi")
	if code != exitUsage || !strings.Contains(stderr, "--tools: frob matches no built-in tool") || !strings.Contains(stderr, "no API key for anthropic") {
		t.Errorf("a bad --tools and no key: exit %d\n%s", code, stderr)
	}
	_, stderr, code = z.run("-p", "--tools", "read,ba*", "hi")
	if code != exitFailure || !strings.HasPrefix(stderr, "zot: no API key for anthropic") {
		t.Errorf("good --tools and no key: exit %d\n%s", code, stderr)
	}
}
