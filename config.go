package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Where zot keeps its state and what it remembers there: $ZOT_HOME,
// config.json (the user's last choices) and auth.json (API keys), and how a
// provider's key is found. Reads name the file they failed on; writes are
// whole or not at all.

// zotHome is where zot keeps its state; it is created on first need.
func zotHome() string {
	if h := os.Getenv("ZOT_HOME"); h != "" {
		return h
	}
	home, _ := os.UserHomeDir()
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, "Library", "Application Support", "zot")
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "zot")
	}
	return filepath.Join(home, ".local", "state", "zot")
}

// defaultHomeHint is zotHome's default as --help shows it.
func defaultHomeHint() string {
	if runtime.GOOS == "darwin" {
		return "~/Library/Application Support/zot"
	}
	return "$XDG_STATE_HOME/zot or ~/.local/state/zot"
}

// userConfig is $ZOT_HOME/config.json: choices the user made earlier.
type userConfig struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	BaseURL  string `json:"base_url,omitempty"`
	// ModelServers are the servers /model took a local model from, by
	// "provider/model": a later run of that model goes there without
	// --base-url.
	ModelServers map[string]string `json:"model_servers,omitempty"`
	// MCPWait is how long a run without the TUI waits for MCP servers
	// before its first model request ("5s"; --mcp-wait wins).
	MCPWait string `json:"mcp_wait,omitempty"`
	// CacheRetention is how long Anthropic keeps the prompt cache: "5m"
	// (its default) or "1h" (docs/usage.md#prompt-caching).
	CacheRetention string `json:"cacheRetention,omitempty"`
	// BashOutputLimit is the most of a command's output a bash result
	// holds, BashSpillLimit the most its spill file keeps whole (0: no
	// spill file); each a number of bytes or a size such as "16KiB".
	BashOutputLimit configSize `json:"bash_output_limit,omitempty"`
	BashSpillLimit  configSize `json:"bash_spill_limit,omitempty"`

	// raw is every setting as written and path the file, for those read
	// on demand (str, fraction).
	raw  map[string]json.RawMessage
	path string
}

// configSize is a size as config.json gives it, a number or a string,
// read by parseSize.
type configSize string

func (c *configSize) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) != nil {
		s = string(b)
	}
	*c = configSize(s)
	return nil
}

// bashLimits are config.json's sizes for the bash tool, as ToolEnv takes
// them (0: the default; a spill limit below 0: no spill file). A value
// that is not a size is named through warn and left at the default.
func (c userConfig) bashLimits(warn func(format string, args ...any)) (output int, spill int64) {
	size := func(key string, v configSize, atLeast int64) (int64, bool) {
		if v == "" {
			return 0, false
		}
		n, err := parseSize(string(v))
		if err == nil && n < atLeast {
			err = fmt.Errorf("below %d bytes", atLeast)
		}
		if err != nil {
			warn("config.json: %s %q is not a size such as \"16KiB\" or a number of bytes: %v (ignored)", key, v, err)
			return 0, false
		}
		return n, true
	}
	if n, ok := size("bash_output_limit", c.BashOutputLimit, 1024); ok {
		output = int(min(n, bashOutputMax))
	}
	if n, ok := size("bash_spill_limit", c.BashSpillLimit, 0); ok {
		spill = n
		if n == 0 {
			spill = -1
		}
	}
	return output, spill
}

// parseSize reads a size: a number of bytes, or a number and a unit (B,
// KiB, MiB, GiB; K, M, G and KB, MB, GB mean the same).
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	digits := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	unit := strings.ToUpper(strings.TrimSpace(s[len(digits):]))
	shift, ok := map[string]int{"": 0, "B": 0, "K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20, "MIB": 20, "G": 30, "GB": 30, "GIB": 30}[unit]
	v, err := strconv.ParseInt(digits, 10, 64)
	switch {
	case !ok:
		return 0, fmt.Errorf("unknown unit %q", unit)
	case err != nil:
		return 0, errors.New("no number")
	case v > math.MaxInt64>>shift:
		return 0, errors.New("too large")
	}
	return v << shift, nil
}

// saveConfig remembers the user's choices in config.json, written whole;
// the settings it does not set ("claude_hooks", and any zot does not
// know) are kept. The file is private (0600, or the file's own mode when
// that is stricter): a base URL can carry credentials
// (https://user:pass@host, ?key=).
func saveConfig(home string, c userConfig) error {
	path := filepath.Join(home, "config.json")
	settings := map[string]json.RawMessage{}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("save %s: %w", path, err)
	default:
		if err := json.Unmarshal(old, &settings); err != nil {
			return fmt.Errorf("save %s: the file is not a JSON object (%v); fix or remove it", path, err)
		}
	}
	for key, v := range map[string]string{"provider": c.Provider, "model": c.Model, "base_url": c.BaseURL} {
		if v == "" {
			delete(settings, key)
		} else {
			settings[key], _ = json.Marshal(v)
		}
	}
	if len(c.ModelServers) > 0 {
		settings["model_servers"], _ = json.Marshal(c.ModelServers)
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	mode := os.FileMode(0o600)
	if info, err := os.Stat(path); err == nil {
		mode &= info.Mode().Perm()
	}
	if err := writeFileAtomic(path, append(b, '\n'), mode); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	return nil
}

// loadConfig reads config.json; a missing file is an empty one.
func loadConfig(home string) (userConfig, error) {
	path := filepath.Join(home, "config.json")
	c := userConfig{path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("read %s: %w", path, err)
	}
	json.Unmarshal(b, &c.raw) // an object, since the line above read it
	return c, nil
}

// modelServer is the server /model took model of provider from, "" when
// none is remembered.
func (c userConfig) modelServer(provider, model string) string {
	return c.ModelServers[provider+"/"+model]
}

// ollamaEnvBase is the base URL ollama's own OLLAMA_HOST names, "" when
// it is not set: where --provider ollama goes when neither --base-url nor
// config.json says.
func ollamaEnvBase() (string, error) {
	host := os.Getenv("OLLAMA_HOST")
	if strings.TrimSpace(host) == "" {
		return "", nil
	}
	base, err := ollamaHostURL(host)
	if err == nil {
		err = checkBaseURL(base)
	}
	if err != nil {
		return "", fmt.Errorf("%w; fix it, or give --base-url", err)
	}
	return base, nil
}

// authFile is $ZOT_HOME/auth.json.
type authFile map[string]struct {
	APIKey string `json:"api_key"`
}

// loadAuth reads auth.json, refusing one that others can read: a key file
// readable by the group or world is a leak waiting to happen.
func loadAuth(home string) (authFile, error) {
	path := filepath.Join(home, "auth.json")
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return authFile{}, nil
	}
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by other users (mode %04o); run: chmod 600 %q", path, st.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var a authFile
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return a, nil
}

// saveAuthKey stores the key for provider in auth.json, or removes it when
// key is empty. The file is replaced whole with mode 0600; other providers'
// entries and any fields zot does not know are kept.
func saveAuthKey(home, provider, key string) error {
	_, err := updateAuthKey(home, provider, key)
	return err
}

// removeAuthKey removes provider's entry from auth.json and reports
// whether there was one: with no file, or no entry, nothing is written.
func removeAuthKey(home, provider string) (removed bool, err error) {
	return updateAuthKey(home, provider, "")
}

// updateAuthKey is saveAuthKey, reporting whether auth.json changed.
func updateAuthKey(home, provider, key string) (changed bool, err error) {
	path := filepath.Join(home, "auth.json")
	entries := map[string]json.RawMessage{}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return false, fmt.Errorf("save key in %s: %w", path, err)
	default:
		if err := json.Unmarshal(b, &entries); err != nil {
			return false, fmt.Errorf("save key in %s: the file is not valid JSON (%v); fix or remove it", path, err)
		}
	}
	if key == "" {
		if _, ok := entries[provider]; !ok {
			return false, nil
		}
		delete(entries, provider)
	} else {
		entry := map[string]json.RawMessage{}
		if old, ok := entries[provider]; ok {
			json.Unmarshal(old, &entry)
		}
		entry["api_key"], _ = json.Marshal(key)
		entries[provider], _ = json.Marshal(entry)
	}
	out, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return false, fmt.Errorf("save key in %s: %w", path, err)
	}
	if err := writeFileAtomic(path, append(out, '\n'), 0o600); err != nil {
		return false, fmt.Errorf("save key in %s: %w", path, err)
	}
	return true, nil
}

// resolveKey finds the API key: --api-key, then the environment, then
// auth.json. It returns where the key came from, for error messages.
func resolveKey(provider, flagKey, home string) (key, source string, err error) {
	if flagKey != "" {
		return flagKey, "--api-key", nil
	}
	if provider == "ollama" {
		return "", "", nil
	}
	env := keyEnvVar(provider)
	if k := os.Getenv(env); k != "" {
		return k, env, nil
	}
	auth, err := loadAuth(home)
	if err != nil {
		return "", "", err
	}
	if k := auth[provider].APIKey; k != "" {
		return k, filepath.Join(home, "auth.json"), nil
	}
	return "", "", nil
}

// hooksEnabled says whether the user turned hooks on: --claude-hooks, or
// "claude_hooks": true in $ZOT_HOME/config.json.
func hooksEnabled(flag bool, home string) (bool, error) {
	if flag {
		return true, nil
	}
	on, err := configBool(home, "claude_hooks", false)
	if err != nil {
		return false, fmt.Errorf("%v; hooks stay off", err)
	}
	return on, nil
}

// promptsEnabled says whether prompt templates load: not with
// --no-prompts (noFlag) or "prompts": false in $ZOT_HOME/config.json.
func promptsEnabled(noFlag bool, home string) (bool, error) {
	if noFlag {
		return false, nil
	}
	on, err := configBool(home, "prompts", true)
	if err != nil {
		return false, fmt.Errorf("%v; prompt templates stay off", err)
	}
	return on, nil
}

// configBool reads a true/false setting of config.json: def when the file
// or the key is not there (main reports a file it cannot read), an error
// when the value is not a boolean.
func configBool(home, key string, def bool) (bool, error) {
	path := filepath.Join(home, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return def, nil
	}
	var cfg map[string]json.RawMessage
	if json.Unmarshal(b, &cfg) != nil || cfg[key] == nil {
		return def, nil
	}
	var on bool
	if err := json.Unmarshal(cfg[key], &on); err != nil {
		return def, fmt.Errorf("%s: %q must be true or false", path, key)
	}
	return on, nil
}

// Settings that only some parts read stay raw in userConfig.raw and are
// read on demand, so that a value of the wrong type is that setting's
// error ("ignored"), not a config.json zot refuses to start with.

// str is a string setting: "" when it is not there, an error when the
// value is not a string.
func (c userConfig) str(key string) (string, error) {
	var v string
	if c.raw[key] == nil {
		return "", nil
	}
	if err := json.Unmarshal(c.raw[key], &v); err != nil {
		return "", fmt.Errorf("%s: %q must be a string", c.path, key)
	}
	return v, nil
}

// fraction is a share (compact_threshold): 0 when it is not there, an
// error unless it is a number above 0 and at most 1.
func (c userConfig) fraction(key, example string) (float64, error) {
	var v float64
	if c.raw[key] == nil {
		return 0, nil
	}
	if err := json.Unmarshal(c.raw[key], &v); err != nil || v <= 0 || v > 1 {
		return 0, fmt.Errorf("%s: %q must be a number above 0 and at most 1 (%s)", c.path, key, example)
	}
	return v, nil
}
