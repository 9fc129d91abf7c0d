package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A command the model runs must not read the key back from zot's own
// environment (/proc/$PPID/environ), while zot keeps working. As root the
// run is made as nobody: root may read any process's /proc files.
func TestModelCannotReadZotsEnvironment(t *testing.T) {
	t.Parallel()
	const secret = "sk-ant-zot-test-secret-4711"
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": `cat /proc/$$/environ >/dev/null && echo own-environ-readable; cat /proc/$PPID/environ`}),
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	z := newZotRun(t)
	z.env = append(z.env, "ANTHROPIC_API_KEY="+secret)
	cmd := z.cmd("-p", "--provider", "anthropic", "--base-url", srv.URL, "--no-session", "--no-audit", "look")
	if os.Geteuid() == 0 {
		bin := filepath.Join(t.TempDir(), "zot")
		os.Chmod(filepath.Dir(bin), 0o755)
		os.Chmod(filepath.Dir(filepath.Dir(bin)), 0o755)
		copyExecutable(t, zotBin(t), bin)
		cmd.Path = bin
		for _, dir := range []string{z.home, z.cwd} {
			os.Chmod(filepath.Dir(dir), 0o755)
			if err := os.Chown(dir, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}
		// The notes shown already (newZotRun), so that zot has none to say.
		filepath.WalkDir(filepath.Join(z.home, "noted"), func(p string, _ fs.DirEntry, _ error) error { return os.Chown(p, nobody, nobody) })
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "done\n" {
		t.Fatalf("zot: %v\n%s", err, out)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	var body anthRequest
	if err := json.Unmarshal(reqs[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	result := body.Messages[len(body.Messages)-1].Content[0]
	var text strings.Builder
	for _, c := range result.Content {
		if c.Text != nil {
			text.WriteString(*c.Text)
		}
	}
	got := text.String()
	if strings.Contains(got, secret) {
		t.Fatalf("the command read the key from zot's environment:\n%s", got)
	}
	if !strings.Contains(got, "own-environ-readable") {
		t.Errorf("the command could not read its own environ, so the test proves nothing:\n%s", got)
	}
	if !strings.Contains(got, "environ: Permission denied") {
		t.Errorf("want zot's environ refused:\n%s", got)
	}
}
