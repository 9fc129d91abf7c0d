package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// /model remembers the choice in config.json; the settings beside it stay:
// "claude_hooks": true is still on afterwards, and what zot does not know
// is kept for whoever wrote it.
func TestSaveConfigKeepsTheOtherSettings(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path := filepath.Join(home, "config.json")
	os.WriteFile(path, []byte(`{"provider": "anthropic", "model": "old", "base_url": "http://old", "claude_hooks": true, "theme": {"dark": true}}`), 0o600)
	if err := saveConfig(home, userConfig{Provider: "openai", Model: "gpt-5"}); err != nil {
		t.Fatal(err)
	}
	if on, err := hooksEnabled(false, home); !on || err != nil {
		t.Errorf("claude_hooks after saveConfig: %v %v", on, err)
	}
	c, err := loadConfig(home)
	if err != nil || c.Provider != "openai" || c.Model != "gpt-5" || c.BaseURL != "" {
		t.Errorf("read back %+v %v (the old base_url must go with its provider)", c, err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `"theme": {`) {
		t.Errorf("an unknown setting was dropped:\n%s", b)
	}
}

// A config.json that is not JSON is not replaced by the choice: it is
// the user's to fix, and nothing in it is lost.
func TestSaveConfigLeavesABrokenFileAlone(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path := filepath.Join(home, "config.json")
	broken := []byte(`{"claude_hooks": true,`)
	os.WriteFile(path, broken, 0o600)
	err := saveConfig(home, userConfig{Provider: "openai", Model: "gpt-5"})
	if err == nil || !strings.Contains(err.Error(), "not a JSON object") || !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(broken) {
		t.Errorf("the broken file was changed to %s", b)
	}
}

// The bash tool's sizes in config.json: numbers of bytes or sizes with a
// unit; a bad one is named and the default kept; a spill limit of 0 means
// no spill file.
func TestConfigBashLimits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		json, warning string
		output        int
		spill         int64
	}{
		{`{}`, "", 0, 0},
		{`{"bash_output_limit": "8KiB", "bash_spill_limit": "1 GiB"}`, "", 8 << 10, 1 << 30},
		{`{"bash_output_limit": 4096, "bash_spill_limit": 0}`, "", 4096, -1},
		{`{"bash_output_limit": "64M", "bash_spill_limit": "2mb"}`, "", bashOutputMax, 2 << 20},
		{`{"bash_output_limit": "12"}`, `bash_output_limit "12" is not a size such as "16KiB" or a number of bytes: below 1024 bytes (ignored)`, 0, 0},
		{`{"bash_spill_limit": "lots"}`, `bash_spill_limit "lots" is not a size such as "16KiB" or a number of bytes: unknown unit "LOTS" (ignored)`, 0, 0},
		{`{"bash_spill_limit": "MiB"}`, `no number`, 0, 0},
		{`{"bash_spill_limit": "5 TB"}`, `unknown unit "TB"`, 0, 0},
		{`{"bash_spill_limit": -3}`, `below 0 bytes`, 0, 0},
	} {
		home := t.TempDir()
		os.WriteFile(filepath.Join(home, "config.json"), []byte(c.json), 0o600)
		cfg, err := loadConfig(home)
		if err != nil {
			t.Fatalf("%s: %v", c.json, err)
		}
		var warnings []string
		output, spill := cfg.bashLimits(func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) })
		if output != c.output || spill != c.spill || (c.warning == "") != (len(warnings) == 0) || len(warnings) > 0 && !strings.Contains(warnings[0], c.warning) {
			t.Errorf("%s: output %d, spill %d, warnings %q", c.json, output, spill, warnings)
		}
	}
}

// bash_output_limit reaches the bash tool of the real binary: the model
// gets that much of a long output.
func TestConfigBashOutputLimitReachesTheModel(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	os.WriteFile(filepath.Join(z.home, "config.json"), []byte(`{"bash_output_limit": "2KiB"}`), 0o600)
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "seq 1 100000"}),
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "count")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	var body anthRequest
	json.Unmarshal(reqs[1].Body, &body)
	result := body.Messages[len(body.Messages)-1].Content[0].Content[0]
	if result.Text == nil || len(*result.Text) > 2<<10+200 || !strings.Contains(*result.Text, "bytes cut (lines ") {
		t.Errorf("the result is not cut at 2 KiB: %v", result.Text)
	}
}
