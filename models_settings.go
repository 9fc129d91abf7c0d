package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// What models.json says of a server beside its models' limits and prices:
// the key and headers a gateway wants, whether tool calls are read from
// text, whether the model gets tools at all, the compatibility switches
// and the timeouts. A provider block's settings hold for the server at its
// baseUrl (for every request of that provider when it names none); a
// model's own settings win over its provider's, field by field.
//
//	{"providers": {"openai": {"baseUrl": "https://gw.example/llm/v1",
//	  "apiKey": "!pass show gateway", "headers": {"X-Tenant": "$GW_TENANT"},
//	  "models": [{"id": "qwen3-coder", "textToolCalls": false, "tools": true,
//	    "compat": {"maxTokensField": "max_tokens", "supportsUsageInStreaming": false},
//	    "responseTimeout": "15m", "idleTimeout": "20m", "compactThreshold": 0.7}]}}}

// serverOptions are the settings a provider block or a model may carry.
type serverOptions struct {
	APIKey          string            `json:"apiKey"`
	Headers         map[string]string `json:"headers"`
	TextToolCalls   *bool             `json:"textToolCalls"`
	Tools           *bool             `json:"tools"`
	Compat          *Compat           `json:"compat"`
	ResponseTimeout string            `json:"responseTimeout"`
	IdleTimeout     string            `json:"idleTimeout"`
}

// over is o with what m sets.
func (o serverOptions) over(m serverOptions) serverOptions {
	o.APIKey = cmp.Or(m.APIKey, o.APIKey)
	if m.Headers != nil {
		h := map[string]string{}
		for k, v := range o.Headers {
			h[k] = v
		}
		for k, v := range m.Headers {
			h[k] = v
		}
		o.Headers = h
	}
	o.TextToolCalls = cmp.Or(m.TextToolCalls, o.TextToolCalls)
	o.Tools = cmp.Or(m.Tools, o.Tools)
	switch {
	case o.Compat == nil:
		o.Compat = m.Compat
	case m.Compat != nil:
		c := o.Compat.Over(*m.Compat)
		o.Compat = &c
	}
	o.ResponseTimeout = cmp.Or(m.ResponseTimeout, o.ResponseTimeout)
	o.IdleTimeout = cmp.Or(m.IdleTimeout, o.IdleTimeout)
	return o
}

// check says what is wrong with o, for a note naming where it is.
func (o serverOptions) check() error {
	for name, v := range o.Headers {
		if !headerName().MatchString(name) {
			return fmt.Errorf("header name %q is not one HTTP allows", name)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf("header %s holds a line break", name)
		}
	}
	for _, d := range []struct{ name, v string }{{"responseTimeout", o.ResponseTimeout}, {"idleTimeout", o.IdleTimeout}} {
		if _, err := parsePositiveDuration(d.v); err != nil {
			return fmt.Errorf("%s: %v", d.name, err)
		}
	}
	if o.Compat != nil {
		return o.Compat.Check()
	}
	return nil
}

var headerName = lazyRegexp("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// parsePositiveDuration reads "15m"; "" is 0.
func parsePositiveDuration(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a duration such as \"90s\" or \"15m\"", v)
	}
	return d, nil
}

// userServer is one provider block's or model's settings and the server
// they are for ("" for any of the provider).
type userServer struct {
	base string
	opts serverOptions
}

// userServers are the settings of models.json, set at start by
// useUserModels.
var userServers struct {
	sync.RWMutex
	providers map[string]userServer    // by provider
	models    map[[2]string]userServer // by provider and model id
}

// setUserServers replaces the settings.
func setUserServers(providers map[string]userServer, models map[[2]string]userServer) {
	userServers.Lock()
	defer userServers.Unlock()
	userServers.providers, userServers.models = providers, models
}

// optionsFor merges what models.json says for provider's model served at
// base: the provider block's settings when they are for that server, then
// the model's when they are. path names where the key comes from.
func optionsFor(provider, model, base string) (opts serverOptions, keyFrom string) {
	userServers.RLock()
	defer userServers.RUnlock()
	same := func(b string) bool { return b == "" || sameServer(b, base) }
	if p, ok := userServers.providers[provider]; ok && same(p.base) {
		opts = p.opts
		if p.opts.APIKey != "" {
			keyFrom = fmt.Sprintf("models.json apiKey of provider %q", provider)
		}
	}
	if m, ok := userServers.models[[2]string{provider, model}]; ok && same(m.base) {
		opts = opts.over(m.opts)
		if m.opts.APIKey != "" {
			keyFrom = fmt.Sprintf("models.json apiKey of %s/%s", provider, model)
		}
	}
	return opts, keyFrom
}

func sameServer(a, b string) bool {
	return strings.TrimRight(a, "/") == strings.TrimRight(b, "/")
}

// loadUserServers reads the settings of models.json; what loadUserModels
// reported as broken is left out here without a second note.
func loadUserServers(home string) (providers map[string]userServer, models map[[2]string]userServer, notes []string) {
	path := filepath.Join(home, "models.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil
	}
	var file struct {
		Providers map[string]struct {
			BaseURL string `json:"baseUrl"`
			serverOptions
			Models []struct {
				ID      string `json:"id"`
				BaseURL string `json:"baseUrl"`
				serverOptions
			} `json:"models"`
		} `json:"providers"`
	}
	if json.Unmarshal(data, &file) != nil {
		return nil, nil, nil
	}
	providers, models = map[string]userServer{}, map[[2]string]userServer{}
	for name, p := range file.Providers {
		provider := name
		if alias, ok := userProviderAliases[name]; ok {
			provider = alias
		}
		if err := p.serverOptions.check(); err != nil {
			notes = append(notes, fmt.Sprintf("%s: provider %q: %v; its settings are not used", path, name, err))
		} else {
			providers[provider] = userServer{base: p.BaseURL, opts: p.serverOptions}
		}
		for _, m := range p.Models {
			if m.ID == "" {
				continue
			}
			if err := m.serverOptions.check(); err != nil {
				notes = append(notes, fmt.Sprintf("%s: %s/%s: %v; its settings are not used", path, name, m.ID, err))
				continue
			}
			models[[2]string{provider, m.ID}] = userServer{base: cmp.Or(m.BaseURL, p.BaseURL), opts: m.serverOptions}
		}
	}
	return providers, models, notes
}

// endpointConfig completes pc, the provider zot talks to for model, with
// models.json's settings for that server and model and config.json's
// timeouts. The key: --api-key wins, then models.json's apiKey, then what
// pc holds (the environment, auth.json). Flags already in pc win.
func endpointConfig(home string, pc ProviderConfig, model string) (ProviderConfig, error) {
	opts, keyFrom := optionsFor(pc.Name, model, pc.BaseURL)
	if opts.APIKey != "" && pc.KeySource != "--api-key" {
		key, err := secretValue(opts.APIKey)
		if err != nil {
			return pc, fmt.Errorf("%s: %w", keyFrom, err)
		}
		pc.APIKey, pc.KeySource = key, keyFrom
	}
	if len(opts.Headers) > 0 {
		pc.Local.Headers = map[string]string{}
		for name, v := range opts.Headers {
			value, err := secretValue(v)
			if err != nil {
				return pc, fmt.Errorf("models.json header %s: %w", name, err)
			}
			pc.Local.Headers[name] = value
		}
	}
	pc.Local.TextToolCalls, pc.Local.Tools = opts.TextToolCalls, opts.Tools
	if opts.Compat != nil {
		pc.Local.Compat = *opts.Compat
	}
	// A flag's timeout, else models.json's for this model, else
	// config.json's; one that is not a duration counts as none (the notes
	// of useUserModels say so).
	if pc.ResponseTimeout == 0 || pc.IdleTimeout == 0 {
		cfg, _ := loadConfig(home)
		duration := func(v string, _ error) time.Duration {
			d, _ := parsePositiveDuration(v)
			return d
		}
		pc.ResponseTimeout = cmp.Or(pc.ResponseTimeout, duration(opts.ResponseTimeout, nil), duration(cfg.str("response_timeout")))
		pc.IdleTimeout = cmp.Or(pc.IdleTimeout, duration(opts.IdleTimeout, nil), duration(cfg.str("idle_timeout")))
	}
	if pc.Local.Cache == nil {
		pc.Local.Cache = serverInfoCache{home: home}
	}
	return pc, nil
}

// secretValue reads a key or header value of models.json: "!command" is
// the output of the command (run once per start, through sh, without
// zot's secrets in its environment; its output is never shown), "$NAME"
// or "${NAME}" an environment variable, anything else itself.
func secretValue(v string) (string, error) {
	switch {
	case strings.HasPrefix(v, "!"):
		return commandSecret(strings.TrimSpace(v[1:]))
	case strings.HasPrefix(v, "$") && len(v) > 1:
		name := strings.TrimSuffix(strings.TrimPrefix(v[1:], "{"), "}")
		val, ok := os.LookupEnv(name)
		if !ok || val == "" {
			return "", fmt.Errorf("the environment variable %s is not set", name)
		}
		return val, nil
	}
	return v, nil
}

// secretCommands are the outputs of the "!command" values run so far:
// each command runs once per start.
var secretCommands struct {
	sync.Mutex
	out map[string]string
}

// secretCommandTimeout bounds a key command (a password manager asking
// for its passphrase would otherwise hang the start).
const secretCommandTimeout = 30 * time.Second

func commandSecret(command string) (string, error) {
	if command == "" {
		return "", errors.New("the command after ! is empty")
	}
	secretCommands.Lock()
	defer secretCommands.Unlock()
	if v, ok := secretCommands.out[command]; ok {
		return v, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), secretCommandTimeout)
	defer cancel()
	run, err := runToEnd(ctx, procSpec{argv: []string{"/bin/sh", "-c", command}, env: envNoSecrets}, nil, 64<<10, time.Second)
	switch {
	case err != nil:
		return "", fmt.Errorf("the command could not start: %v", err)
	case run.stopped:
		return "", fmt.Errorf("the command did not finish within %v", secretCommandTimeout)
	case !run.state.Success():
		why := strings.TrimSpace(firstLine(string(run.stderr.Bytes())))
		if why != "" {
			why = ": " + truncate(sanitize(why), 200)
		}
		return "", fmt.Errorf("the command failed (%v)%s", run.state, why)
	}
	v := strings.TrimSpace(string(run.stdout.Bytes()))
	if v == "" {
		return "", errors.New("the command printed nothing")
	}
	if secretCommands.out == nil {
		secretCommands.out = map[string]string{}
	}
	secretCommands.out[command] = v
	return v, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// serverInfoCache keeps what servers said of themselves in
// models-cache.json, beside the model lists.
type serverInfoCache struct{ home string }

func (c serverInfoCache) Load(key string) (ServerInfo, bool) {
	info, ok := readModelsCache(c.home).Probes[key]
	return info, ok
}

func (c serverInfoCache) Store(key string, info ServerInfo) {
	updateModelsCache(c.home, func(cache *modelsCache) {
		if cache.Probes == nil {
			cache.Probes = map[string]ServerInfo{}
		}
		if info.Fetched.IsZero() && info.Refused == nil {
			delete(cache.Probes, key)
		} else {
			cache.Probes[key] = info
		}
	})
}

// httpClientFor is the client of a model listing: the user's headers on
// every request, and the key and headers kept to the server's origin.
func httpClientFor(headers map[string]string) *http.Client {
	if len(headers) == 0 {
		return credentialClient(nil)
	}
	return credentialClient(&http.Client{Transport: headerTransport{headers, providerTransport}})
}

type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.next.RoundTrip(r)
}
