package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Keys and a user's headers go only to the host the user named. Go's own
// redirect policy drops Authorization and Cookie on a redirect to another
// host but replays every other header — x-api-key, an MCP server's
// X-Api-Key — to wherever a 307 points, body and all. So every HTTP client
// zot sends a credential with refuses a redirect that leaves the origin
// it was given (scheme, host and port; http to https on the same host is
// allowed, https to http is not) and says where it led.

// maxRedirects is as many as Go follows by default.
const maxRedirects = 10

// RedirectRefusedError is a redirect a client with credentials did not
// follow. From and To are shown without userinfo or query, which may
// carry secrets.
type RedirectRefusedError struct {
	From, To string
	Why      string // "another host", "another port", "from https to http"
}

func (e *RedirectRefusedError) Error() string {
	return fmt.Sprintf("the server redirected %s to %s (%s); zot does not send your key or headers there: if the new address is right, configure it instead", e.From, e.To, e.Why)
}

// sameOriginRedirects is the CheckRedirect of every HTTP client zot sends
// a key, a token or a user's configured header with (credentialClient
// sets it). A redirect within the origin of the first request is
// followed, with every header, as Go does; any other is refused with a
// *RedirectRefusedError naming both ends.
func sameOriginRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	from, to := via[0].URL, req.URL
	if why := leavesOrigin(from, to); why != "" {
		return &RedirectRefusedError{From: shownURL(from.String()), To: shownURL(to.String()), Why: why}
	}
	return nil
}

// credentialClient is c (a new client when nil) with the redirect policy
// above. A client that brings a CheckRedirect of its own keeps it: an
// embedder that set one chose.
func credentialClient(c *http.Client) *http.Client {
	if c == nil {
		return &http.Client{Transport: providerTransport, CheckRedirect: sameOriginRedirects}
	}
	if c.CheckRedirect != nil {
		return c
	}
	copied := *c
	copied.CheckRedirect = sameOriginRedirects
	return &copied
}

// leavesOrigin says how to leaves the origin of from, or "" when it
// stays: the same host and port, not from https down to http. http up to
// https on the default ports is the same server answering securely.
func leavesOrigin(from, to *url.URL) string {
	fs, ts := strings.ToLower(from.Scheme), strings.ToLower(to.Scheme)
	fp, tp := effectivePort(from), effectivePort(to)
	switch {
	case !strings.EqualFold(from.Hostname(), to.Hostname()):
		return "another host"
	case fs == "https" && ts != "https":
		return "from https to http"
	case fp == tp, fs == "http" && ts == "https" && fp == "80" && tp == "443":
		return ""
	}
	return "another port"
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}
