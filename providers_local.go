package main

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Local servers and gateways: what zot does differently for a server that
// is not one of the vendors' own APIs — llama.cpp's llama-server, ollama,
// vLLM, LM Studio, TGI, a company gateway. Where their base URLs lead, how
// their error pages read, their overflow wordings, and how zot counts
// tokens when they do not.

// checkBaseURL refuses a base URL zot cannot send a request to: one
// without http:// or https:// (a bare "localhost:8080" parses as the
// scheme "localhost"), or without a host.
func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL (%v); give one such as http://localhost:8080/v1", shownURL(raw), err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q is not an http:// or https:// URL; give one such as http://localhost:8080/v1", shownURL(raw))
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host; give one such as http://localhost:8080/v1", shownURL(raw))
	}
	return nil
}

// endpointURL is base with path appended to its path, its query kept. A
// base URL whose path ends in a slash gets no second one.
func endpointURL(base, path string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimRight(base, "/") + path
	}
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	return u.String()
}

// hasPath says whether a base URL names a path beyond its host. Such a
// base is used as given, as the OpenAI SDKs do (…/v1, …/v1beta/openai/,
// a gateway's /llm/openai); a bare host gets /v1.
func hasPath(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.Trim(u.Path, "/") != ""
}

// openaiURL is where an OpenAI-compatible request for path (/chat/completions,
// /models) goes on base.
func openaiURL(base, path string) string {
	if hasPath(base) {
		return endpointURL(base, path)
	}
	return endpointURL(base, "/v1"+path)
}

// serverRoot is base without a trailing /v1: where a server's own API
// lives beside its OpenAI one (llama-server's /props, ollama's /api/chat).
func serverRoot(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1")
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	u.RawPath = ""
	return u.String()
}

// shownURL is a URL without what it may carry of credentials — user and
// password, a query (?key=…) — for messages.
func shownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		// Not a URL anyone can send to: what is before the first @ or ?
		// may still be a secret.
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			raw = raw[i+1:]
		}
		raw, _, _ = strings.Cut(raw, "?")
		return sanitize(raw)
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return sanitize(u.String())
}

// errorPageLine is the one line a user needs of a body that is not a
// provider's JSON error — a proxy's HTML page, a server's "404 page not
// found": its <title>, else its text without tags, whitespace folded.
func errorPageLine(body []byte) string {
	s := string(body)
	if m := htmlTitle.FindStringSubmatch(s); m != nil {
		s = m[1]
	} else {
		s = htmlTag.ReplaceAllString(s, " ")
	}
	return truncate(sanitize(strings.Join(strings.Fields(s), " ")), 160)
}

var (
	htmlTitle = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	htmlTag   = regexp.MustCompile(`(?s)<[^>]*>`)
)

// pageError fills perr for a body that is not a provider's JSON error: the
// request that got it, the body's type and its one line. A page at a wrong
// path (404, 405) or a 4xx page (a login portal, a proxy's refusal) means
// the base URL leads somewhere else than the API.
func pageError(perr *ProviderError, resp *http.Response, body []byte) {
	if resp.Request != nil {
		perr.Request = resp.Request.Method + " " + shownURL(resp.Request.URL.String())
	}
	ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	perr.ContentType = strings.ToLower(strings.TrimSpace(ct))
	perr.Message = errorPageLine(body)
	switch s := resp.StatusCode; {
	case s == 404 || s == 405, s >= 400 && s < 500 && s != 401 && s != 403 && strings.Contains(perr.ContentType, "html"):
		perr.Hint = "check --base-url"
	}
}
