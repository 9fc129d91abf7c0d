package main

import (
	"fmt"
	"strings"
	"testing"
)

// countWriter is a terminal that counts what it is sent.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// benchTUI is a 120x40 TUI with a transcript of about lines rows already
// printed above the live region.
func benchTUI(b *testing.B, lines int) (*TUI, *countWriter) {
	tui, _ := newTestTUI(b, 120, 40)
	cw := &countWriter{}
	tui.out = cw
	for n := 0; len(tui.commit) < lines; n++ {
		tui.showTranscript([]Message{{Role: "user", Content: []Block{TextBlock(fmt.Sprintf("prompt %d", n))}},
			{Role: "assistant", Content: []Block{TextBlock(strings.Repeat("Some **answer** text with `code` in it.\n", 18))}}})
	}
	tui.render()
	cw.n = 0
	return tui, cw
}

// streamTokens is a reply cut the way providers stream it: a few
// characters at a time, with markdown and line breaks; or one long
// paragraph; or a long Go code block.
func streamTokens(shape string) []string {
	text := "Here is the plan. First, **read** the `main.go` file and find the handler; then change the loop so that it " +
		"stops early when the context is cancelled.\n\n- one\n- two\n\n```go\nfor ctx.Err() == nil {\n\tstep()\n}\n```\n"
	switch shape {
	case "long-paragraph":
		text = strings.Repeat("a long paragraph without any line break keeps growing token by token ", 60)
	case "code-block":
		text = "```go\n" + strings.Repeat("func (s *server) handle(ctx context.Context, n int) error {\n"+
			"\t// retry until the context ends\n\tfor i := 0; i < n && ctx.Err() == nil; i++ {\n"+
			"\t\tif err := s.step(\"request\", 0x1f); err != nil {\n\t\t\treturn fmt.Errorf(\"step %d: %w\", i, err)\n"+
			"\t\t}\n\t}\n\treturn nil\n}\n\n", 10) + "```\n"
	}
	var tokens []string
	for len(text) > 0 {
		n := min(4, len(text))
		tokens = append(tokens, text[:n])
		text = text[n:]
	}
	return tokens
}

// BenchmarkTUIStreamToken is the cost of one streamed token: the event
// handled and the frame drawn, with a long transcript above. B/token is
// what reaches the terminal.
func BenchmarkTUIStreamToken(b *testing.B) {
	for _, c := range []struct {
		name  string
		lines int
		shape string
	}{{"transcript=0", 0, ""}, {"transcript=10000", 10000, ""}, {"transcript=10000/long-paragraph", 10000, "long-paragraph"},
		{"transcript=10000/code-block", 10000, "code-block"}} {
		b.Run(c.name, func(b *testing.B) {
			tui, cw := benchTUI(b, c.lines)
			tokens := streamTokens(c.shape)
			feed(tui, Event{Type: "assistant_start"})
			cw.n = 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%len(tokens) == 0 && i > 0 {
					tui.event(Event{Type: "assistant_message"})
					tui.event(Event{Type: "assistant_start"})
				}
				tui.event(Event{Type: "text_delta", Delta: tokens[i%len(tokens)]})
				tui.render()
			}
			b.ReportMetric(float64(cw.n)/float64(b.N), "B/token")
		})
	}
}

// BenchmarkTUIKeystrokeEcho is the work from a key's bytes to the frame
// that shows it: decode, edit, lay out, diff, write.
func BenchmarkTUIKeystrokeEcho(b *testing.B) {
	tui, cw := benchTUI(b, 10000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%200 == 0 {
			tui.ed.reset()
		}
		tui.input([]byte{byte('a' + i%26)}, false)
		tui.render()
	}
	b.ReportMetric(float64(cw.n)/float64(b.N), "B/key")
}
