package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"time"
)

// http hooks: the event's JSON is POSTed to the URL the settings name, and
// a 2xx answer's body is read as a command's stdout after exit 0. What
// differs from Claude Code is what a failure means where the event can
// block: there it blocks (hookFailsClosed).

// hookHTTPClient sends the http hooks of one Hooks. It follows no
// redirect — the user named the URL the event's data may go to — and
// keeps no idle connection, so nothing of a hook outlives its call.
func hookHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// hookHeaderVar is $NAME or ${NAME} in a header's value.
var hookHeaderVar = lazyRegexp(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// runHookHTTP POSTs body to the hook's URL within its timeout and reads
// at most hookOutputLimit bytes of the answer. A 2xx is code 0 with the
// body as stdout; anything else is an error.
func (h *Hooks) runHookHTTP(ctx context.Context, hd hookHandler, body []byte) hookRun {
	r := hookRun{h: hd, code: -1}
	tctx, cancel := context.WithTimeout(ctx, hd.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(tctx, http.MethodPost, hd.URL, bytes.NewReader(body))
	if err != nil {
		r.err = err
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hd.Headers {
		req.Header.Set(k, hookHeaderVar().ReplaceAllStringFunc(v, func(m string) string {
			name := hookHeaderVar().FindStringSubmatch(m)
			n := name[1] + name[2]
			if !slices.Contains(hd.AllowedEnv, n) {
				return ""
			}
			return os.Getenv(n)
		}))
	}
	resp, err := h.client.Do(req)
	if err == nil {
		defer resp.Body.Close()
		var b []byte
		b, err = io.ReadAll(io.LimitReader(resp.Body, hookOutputLimit+1))
		switch {
		case err != nil:
		case len(b) > hookOutputLimit:
			err = fmt.Errorf("its answer is longer than %d bytes", hookOutputLimit)
		case resp.StatusCode/100 != 2:
			err = fmt.Errorf("it answered %s", resp.Status)
		default:
			r.code, r.stdout = 0, b
		}
	}
	switch {
	case err == nil:
	case ctx.Err() != nil:
		r.err = errors.New("aborted")
	case errors.Is(tctx.Err(), context.DeadlineExceeded):
		r.err = fmt.Errorf("no answer within %s", hd.Timeout.Round(time.Millisecond))
	default:
		r.err = err
	}
	return r
}
