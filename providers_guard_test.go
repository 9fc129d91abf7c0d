package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// No request goes out that an API would refuse for its messages: none at
// all, one that starts with the assistant, an empty prompt. Each is a
// clear error before sending, for every provider.
func TestRequestsWithoutAPromptAreNotSent(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"anthropic", "openai", "ollama"} {
		srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "never"})})
		p, _ := testProvider(t, name, srv.URL)
		reply := Message{Role: RoleAssistant, Content: []Block{TextBlock("an answer")}}
		for _, c := range []struct {
			msgs []Message
			want string
		}{
			{nil, "the request has no messages"},
			{[]Message{reply}, "the conversation starts with the assistant's message"},
			{[]Message{{Role: RoleUser, Content: []Block{TextBlock(" \n")}}, reply}, "message 1 of the conversation is an empty prompt"},
			{[]Message{{Role: RoleUser, Content: []Block{TextBlock("hi")}}, reply, {Role: RoleUser}}, "message 3 of the conversation is an empty prompt"},
		} {
			_, err := p.Stream(context.Background(), Request{Model: "m", Messages: c.msgs}, func(StreamEvent) {})
			if err == nil || !strings.Contains(err.Error(), name+": not sent: "+c.want) {
				t.Errorf("%s %v: err = %v", name, c.msgs, err)
			}
		}
		if n := len(srv.Requests()); n != 0 {
			t.Errorf("%s: %d requests sent", name, n)
		}
	}
}

// A session that holds an empty prompt (written by an older zot) is not
// sent on with -c: the error says which message and what to do.
func TestContinuingASessionWithAnEmptyPromptSaysSo(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	z := newZotRun(t)
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "hello")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(z.home, "sessions", "*", "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("sessions: %v", files)
	}
	b, _ := os.ReadFile(files[0])
	if !bytes.Contains(b, []byte(`"text":"hello"`)) {
		t.Fatalf("session:\n%s", b)
	}
	os.WriteFile(files[0], bytes.Replace(b, []byte(`"text":"hello"`), []byte(`"text":""`), 1), 0o600)
	_, stderr, code := z.run(append(anthropicFlags(srv), "-c", "-p", "again")...)
	if code != exitFailure || !strings.Contains(stderr, "anthropic: not sent: message 1 of the conversation is an empty prompt") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want only the first run's", n)
	}
}
