package main

import (
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
	if err != nil || c != (userConfig{Provider: "openai", Model: "gpt-5"}) {
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
