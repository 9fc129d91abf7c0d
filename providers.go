package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// What the agent sees of a model: the Provider interface, a request and
// the reply its stream events assemble, the errors every client reports
// alike (ProviderError, ErrContextTooLong, Unavailable), and NewProvider,
// which builds the client a ProviderConfig names. The HTTP/SSE streamer
// and its retries are providers_stream.go's; each API has its client
// (providers_anthropic.go, providers_openai.go, providers_responses.go,
// with providers_local.go and providers_ollama.go for servers other than
// the vendors'); the models zot knows are providers_catalogue.go's.

// Provider streams one model reply. Stream calls on for each piece as it
// arrives and returns the assembled reply. On failure it still returns what
// arrived before the failure, so an abort keeps the partial text.
type Provider interface {
	Name() string
	Stream(ctx context.Context, req Request, on func(StreamEvent)) (Reply, error)
}

// Request is one call to the model.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int    // 0: the model's default
	Reasoning string // "", low, medium, high
}

// checkConversation refuses a request no API takes, before it is sent: no
// messages, a first message that is not the user's, a user message with
// nothing in it. The agent never builds one; a session written by hand or
// by an older zot may hold one.
func checkConversation(provider string, msgs []Message) error {
	if len(msgs) == 0 {
		return fmt.Errorf("%s: not sent: the request has no messages", provider)
	}
	if msgs[0].Role != RoleUser {
		return fmt.Errorf("%s: not sent: the conversation starts with the %s's message, not a prompt (/clear starts afresh)", provider, msgs[0].Role)
	}
	for i, m := range msgs {
		if m.Role == RoleUser && m.tallied().blank {
			return fmt.Errorf("%s: not sent: message %d of the conversation is an empty prompt (/fork before it, or /clear)", provider, i+1)
		}
	}
	return nil
}

// StreamEvent is one streamed piece: Type is text, thinking, tool_start (ID,
// Name), tool_args (ID, Delta) or tool_end (ID).
type StreamEvent struct {
	Type  string
	ID    string
	Name  string
	Delta string
}

// Reply is an assembled model reply. Usage carries no cost: prices are the
// agent's business.
type Reply struct {
	Content []Block
	Stop    string
	Usage   Usage
	// Truncated, when set, says that the server read markedly less of the
	// prompt than was sent: it cut the conversation without an error.
	Truncated string
	// Notice is something the user should hear once about how zot speaks
	// to this server (a fallback it chose).
	Notice string
}

// ErrContextTooLong matches (errors.Is) a provider's "prompt is too long"
// refusal, which the agent answers by compacting and retrying once.
var ErrContextTooLong = errors.New("prompt too long for the model's context window")

// ProviderError is an error the provider itself reported, over HTTP or
// inside the stream.
type ProviderError struct {
	Provider string
	Status   int // 0 when it came inside the stream
	Type     string
	Message  string
	Hint     string
	// Request is "POST <url>" (without credentials) when the body was not
	// the provider's JSON error but a page — a proxy's, a server's 404 —
	// whose ContentType the message names: the request is then what the
	// user needs to see.
	Request     string
	ContentType string
}

func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	if e.Request != "" {
		fmt.Fprintf(&b, ": %s → %d", e.Request, e.Status)
		if e.ContentType != "" {
			fmt.Fprintf(&b, " (%s)", e.ContentType)
		}
		if e.Hint != "" {
			b.WriteString(": " + e.Hint)
		}
		if e.Message != "" {
			fmt.Fprintf(&b, "; the server said: %s", e.Message)
		}
		return sanitize(b.String())
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Type != "" {
		b.WriteString(": " + e.Type)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Hint != "" {
		b.WriteString(" (" + e.Hint + ")")
	}
	return sanitize(b.String())
}

func (e *ProviderError) Is(target error) bool {
	if target != ErrContextTooLong {
		return false
	}
	return isOverflow(e.Message, e.Type)
}

// Unavailable reports whether err is a failure of the provider rather than
// of the request: the key was refused (401, 403), the rate or the server
// gave out (408, 429, 5xx, an overload reported inside the stream), or
// the connection did (refused, reset, cut, stalled, no answer). Another
// provider may well answer the same request. A request the server found
// bad (400, 404, 413, 422) or too long for the context window would fail
// anywhere, and an abort is the user's wish: those are not.
func Unavailable(err error) bool {
	var perr *ProviderError
	var nerr net.Error
	var gone serverGone
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, ErrContextTooLong):
		return false
	case errors.As(err, &perr):
		if perr.Status == 0 {
			t := strings.ToLower(perr.Type)
			return strings.Contains(t, "overload") || strings.Contains(t, "rate_limit") ||
				t == "api_error" || t == "server_error" || strings.Contains(t, "unavailable")
		}
		return perr.Status == 401 || perr.Status == 403 || retryableStatus[perr.Status] || perr.Status >= 500
	case errors.As(err, &gone), errors.As(err, &nerr), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	return false
}

// serverGone is a server that stopped answering — no response headers
// in time, a stream that ended early or stalled — with the message of
// the error it wraps.
type serverGone struct{ error }

func (e serverGone) Unwrap() error { return e.error }

// ProviderConfig selects and configures a provider.
type ProviderConfig struct {
	Name      string // anthropic, openai, ollama
	BaseURL   string
	APIKey    string
	KeySource string // where the key came from, for error messages
	Retries   int    // -1: none; 0: the default of 3
	Client    *http.Client
	// ResponseTimeout bounds the wait for a response's headers after a
	// request is sent; 0 is DefaultResponseTimeout. IdleTimeout bounds a
	// started stream's silence; 0 is DefaultIdleTimeout.
	ResponseTimeout time.Duration
	IdleTimeout     time.Duration
	// CacheRetention is how long Anthropic keeps prompt cache entries: ""
	// for its default of 5 minutes, or CacheRetention1h.
	CacheRetention string
	// Local holds what differs for servers other than the vendors' APIs
	// (providers_local.go): headers, text tool calls, compatibility.
	Local LocalOptions
}

// DefaultResponseTimeout is how long a server may take to start answering:
// long enough for a local server to load a large model on the first
// request, short enough that one that accepted the connection and went
// quiet does not hang -p or rpc forever.
const DefaultResponseTimeout = 5 * time.Minute

// DefaultIdleTimeout is how long a started stream may go without progress:
// generous, since a reasoning model may think for minutes, but a server
// that stopped answering must not hang a run forever.
const DefaultIdleTimeout = 10 * time.Minute

// NewProvider builds the client for cfg.Name.
func NewProvider(cfg ProviderConfig) (Provider, error) {
	h := &httpStreamer{client: credentialClient(cfg.Client), retries: cfg.Retries, keySource: cfg.KeySource,
		baseDelay: 500 * time.Millisecond, maxDelay: 30 * time.Second, idle: cmp.Or(cfg.IdleTimeout, DefaultIdleTimeout), sleep: sleepCtx,
		headerTimeout: cmp.Or(cfg.ResponseTimeout, DefaultResponseTimeout), headers: cfg.Local.Headers}
	if h.retries == 0 {
		h.retries = 3
	} else if h.retries < 0 {
		h.retries = 0
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base != "" {
		if err := checkBaseURL(base); err != nil {
			return nil, fmt.Errorf("base URL %w", err)
		}
	}
	switch cfg.Name {
	case "anthropic":
		if base == "" {
			base = "https://api.anthropic.com"
		}
		h.name = "anthropic"
		return &anthropicProvider{http: h, url: endpointURL(base, "/v1/messages"), key: cfg.APIKey, cacheTTL: cfg.CacheRetention}, nil
	case "openai", "ollama":
		if base == "" {
			base = "https://api.openai.com"
			if cfg.Name == "ollama" {
				base = "http://localhost:11434/v1"
			}
		}
		url := openaiURL(base, "/chat/completions")
		h.name = cfg.Name
		vendor := isOpenAIAPI(base)
		p := &openaiProvider{http: h, name: cfg.Name, url: url, key: cfg.APIKey, plainMaxTokens: !vendor, compat: cfg.Local.Compat}
		if p.plainMaxTokens {
			p.local = newLocalServer(cfg.Name, cfg.BaseURL, cfg.APIKey, h, cfg.Local)
		}
		if cfg.Name == "ollama" {
			return &ollamaProvider{openai: p, local: p.local}, nil
		}
		return p, nil
	}
	return nil, fmt.Errorf("unknown provider %q (want anthropic, openai or ollama)", cfg.Name)
}
