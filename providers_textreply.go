package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// Reading the text of a local server's reply: the reasoning a model
// writes into it (<think>…</think>, a lone </think> whose opening tag was
// in the chat template, harmony's analysis channel) becomes the reply's
// thinking; the tool calls it writes (providers_texttools.go) become
// calls, when the tools went as text or the server is not one that
// parses the model's format itself; and while the reply streams, a call
// being written is held back rather than shown as answer text.

// modelFamily is how a family of open models writes its tool calls, known
// by a piece of its model id.
type modelFamily struct {
	names   []string
	formats textFormat
}

// modelFamilies, the first that matches a model id winning. Distills go
// with the teacher whose template they carry (DeepSeek-R1-Distill-Qwen is
// DeepSeek's).
var modelFamilies = []modelFamily{
	{[]string{"gpt-oss"}, fmtHarmony},
	{[]string{"qwen3-coder", "qwen3coder", "qwen3.5", "qwen3.6"}, fmtQwenXML},
	{[]string{"deepseek"}, fmtDeepSeek | fmtDSML},
	{[]string{"kimi-k2", "kimi_k2"}, fmtKimi},
	{[]string{"glm-4.5", "glm-4.6", "glm-4.7", "glm4.5", "glm4.6", "glm4.7", "glm-5"}, fmtGLM},
	{[]string{"qwen", "qwq", "hermes", "granite"}, fmtHermes},
	{[]string{"llama-3", "llama3"}, fmtLlama | fmtJSON},
	{[]string{"mistral", "devstral", "magistral", "ministral", "codestral", "mixtral"}, fmtMistral},
}

// familyFormats are the formats a model's family writes its calls in; 0
// for a model zot does not know.
func familyFormats(model string) textFormat {
	id := strings.ToLower(model)
	for _, f := range modelFamilies {
		for _, n := range f.names {
			if strings.Contains(id, n) {
				return f.formats
			}
		}
	}
	return 0
}

// opensThinking says whether a model's chat template opens <think> for
// it, so that its reply is reasoning until a </think>: QwQ, the R1 models
// and their distills, Qwen3's -Thinking models, MiniMax-M2.
func opensThinking(model string) bool {
	id := strings.ToLower(model)
	for _, n := range []string{"qwq", "deepseek-r1", "r1-distill", "minimax-m2"} {
		if strings.Contains(id, n) {
			return true
		}
	}
	return strings.Contains(id, "qwen3") && strings.Contains(id, "thinking")
}

// replyFormats are the formats read from a reply that carries no native
// call. textToolCalls is models.json's switch: false reads none, true
// every format from any server. Unset: every format when the tools went
// as text; else the model family's own, except from llama-server, whose
// --jinja templates parse every family's format themselves (without
// --jinja it refuses tools, and they go as text) — there a call left in
// the text is one the model did not make as a call.
func replyFormats(textToolCalls *bool, textTools bool, kind, model string) textFormat {
	switch {
	case textToolCalls != nil && !*textToolCalls:
		return 0
	case textTools, textToolCalls != nil:
		return allTextFormats
	case kind == "llama.cpp":
		return 0
	}
	return familyFormats(model)
}

// replyPlan is how one reply of a local server is read.
type replyPlan struct {
	formats     textFormat
	known       func(name string) bool // the tools a bare JSON reply may call
	types       *toolTypes
	thinksFirst bool // the reply is reasoning until a </think>
	// system and messages are the request's: what came from outside the
	// model, which a call read from text must not repeat.
	system   string
	messages []Message
}

// replyPlan is the plan for a reply to req (its tools as given, not yet
// described as text) under plan.
func (l *localServer) replyPlan(req Request, plan localPlan) replyPlan {
	rp := replyPlan{
		formats:     replyFormats(l.opts.TextToolCalls, plan.textTools, plan.info.Kind, req.Model),
		thinksFirst: opensThinking(req.Model) || l.replies.thinksFirst(req.Model),
		system:      req.System,
		messages:    req.Messages,
	}
	if rp.formats != 0 {
		rp.types = schemaTypes(req.Tools)
		rp.known = func(name string) bool { return plan.tools[name] }
	}
	return rp
}

// replyParts are what the text of a reply held.
type replyParts struct {
	thinking string
	text     string
	calls    []textCall
	format   textFormat
	cut      *textCall // a call the output limit cut: its tool, its text as arguments
	lone     bool      // the reasoning ended in a </think> that opened nowhere
	echoed   bool      // the calls repeated what a tool result or the user gave the model
}

// read splits raw, the whole text of a reply: its reasoning, its answer,
// and — when readCalls — the calls that end it. ended says the reply
// ended by itself, not at the output limit.
func (pl *replyPlan) read(raw string, nativeThinking, readCalls, ended bool) replyParts {
	o := scanOptions{allow: pl.formats, types: pl.types, known: pl.known, ended: ended}
	if !readCalls {
		o.allow = 0
	}
	var out replyParts
	var scan textScan
	body := raw
	harmony := isHarmonyStart(strings.TrimLeft(raw, " \t\r\n"))
	if harmony {
		out.thinking, scan = readHarmony(raw, o)
		body = scan.prose
	} else {
		var open bool
		out.thinking, body, out.lone, open = splitThink(raw, pl.thinksFirst && !nativeThinking, !nativeThinking, o.allow&fmtKimi != 0)
		if open && o.allow != 0 {
			// A <think> that never closed may end in a call: the
			// reasoning ends where the call begins, as vLLM's Qwen3
			// reasoning parser has it.
			if k := firstCallMarker(out.thinking, 0, o.allow); k >= 0 {
				if s := scanTextCalls(out.thinking[k:], o); len(s.calls) > 0 || s.cut && s.name != "" && !ended {
					out.thinking, body = strings.TrimSpace(out.thinking[:k]), out.thinking[k:]
				}
			}
		}
		scan = textScan{prose: strings.TrimSpace(body)}
		if o.allow != 0 {
			scan = scanTextCalls(body, o)
		}
	}
	out.text, out.calls, out.format = strings.TrimSpace(scan.prose), scan.calls, scan.format
	if scan.cut {
		if ended || scan.name == "" {
			// Not a call the limit cut: a reply that stopped inside
			// what looks like one shows it as the text it is.
			out.text, out.calls, out.format = strings.TrimSpace(body), nil, 0
		} else {
			out.cut = &textCall{Name: scan.name, Args: json.RawMessage(scan.cutText)}
		}
	}
	if len(out.calls) > 0 && pl.echoes(out.calls) {
		out.echoed, out.calls, out.cut, out.format = true, nil, nil, 0
		out.text = strings.TrimSpace(body)
	}
	if !harmony && body == raw && len(out.calls) == 0 && out.cut == nil {
		out.text = raw // nothing was read from it: the text as the model wrote it
	}
	return out
}

// echoes says whether a call read from the reply repeats, white space
// aside, text the model was given: the system prompt (which holds the
// project's files) or a user's or a tool's message. A model that copies
// the last lines of a file it read has not chosen to call anything.
func (pl *replyPlan) echoes(calls []textCall) bool {
	var given []string
	given = append(given, pl.system)
	for _, m := range pl.messages {
		for _, b := range m.Content {
			switch {
			case b.Type == BlockText && m.Role == RoleUser:
				given = append(given, b.Text)
			case b.Type == BlockToolResult:
				for _, c := range b.Content {
					if c.Type == BlockText {
						given = append(given, c.Text)
					}
				}
			}
		}
	}
	for _, c := range calls {
		needle := withoutSpace(c.src)
		for _, g := range given {
			if strings.Contains(g, c.Name) && strings.Contains(withoutSpace(g), needle) {
				return true
			}
		}
	}
	return false
}

func withoutSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, s)
}

// splitThink splits the reasoning a model wrote into its text from the
// rest: <think>…</think> at its start; everything before the first
// </think> when its template opened the tag (thinksFirst), or when a
// </think> closes nothing (lone; not inside a code fence or backticks).
// Kimi's models may begin their calls inside the reasoning, which then
// ends there, as llama.cpp's parser has it; any other call written inside
// a closed <think>…</think> is reasoning, as llama.cpp's parsers have it.
// open says the text opened <think> and never closed it.
func splitThink(raw string, thinksFirst, lone, kimi bool) (thinking, body string, wasLone, open bool) {
	t := strings.TrimLeft(raw, " \t\r\n")
	switch {
	case strings.HasPrefix(t, "<think>"):
		rest := t[len("<think>"):]
		end, skip := thinkEnd(rest, kimi)
		if end < 0 {
			return strings.TrimSpace(rest), "", false, true
		}
		return strings.TrimSpace(rest[:end]), rest[end+skip:], false, false
	case thinksFirst:
		end, skip := thinkEnd(raw, kimi)
		if end < 0 {
			return "", raw, false, false
		}
		return strings.TrimSpace(raw[:end]), raw[end+skip:], false, false
	case lone:
		if k := loneThinkEnd(raw); k >= 0 {
			return strings.TrimSpace(raw[:k]), raw[k+len("</think>"):], true, false
		}
	}
	return "", raw, false, false
}

// firstCallMarker is where the first marker of a call of allow stands in
// s at or after from, outside a code fence; -1 if none does.
func firstCallMarker(s string, from int, allow textFormat) int {
	for {
		at, _, m := nextMarker(s, from, allow)
		if at < 0 || !inCodeFence(s[:at]) {
			return at
		}
		from = at + len(m)
	}
}

// thinkEnd finds where reasoning ends in s: a </think> (skip is its
// length), or a Kimi call (skip 0: the call is the answer's).
func thinkEnd(s string, kimi bool) (at, skip int) {
	at, skip = strings.Index(s, "</think>"), len("</think>")
	if kimi {
		for _, m := range []string{kimiSection, kimiCall} {
			if k := strings.Index(s, m); k >= 0 && (at < 0 || k < at) {
				at, skip = k, 0
			}
		}
	}
	return at, skip
}

// loneThinkEnd is where the first </think> of s stands when it closes
// nothing: no <think> before it, outside code.
func loneThinkEnd(s string) int {
	k := strings.Index(s, "</think>")
	if k < 0 || strings.Contains(s[:k], "<think>") || k > 0 && s[k-1] == '`' || inCodeFence(s[:k]) {
		return -1
	}
	return k
}

// The tokens of OpenAI's harmony format (gpt-oss).
const (
	hStart   = "<|start|>"
	hChannel = "<|channel|>"
	hMessage = "<|message|>"
	hEnd     = "<|end|>"
	hCall    = "<|call|>"
	hReturn  = "<|return|>"
)

// maxHarmonyHeader bounds a message's header (role, channel, recipient,
// constraint): a longer one is none.
const maxHarmonyHeader = 512

// isHarmonyStart says whether a reply's text (white space trimmed) is
// harmony messages, as a server that passes gpt-oss's output through
// leaves it: a channel, a message start, or a recipient before its
// channel.
func isHarmonyStart(t string) bool {
	return strings.HasPrefix(t, hChannel) || strings.HasPrefix(t, hStart) || strings.HasPrefix(t, "to=functions.")
}

// mayBeHarmonyStart says whether t may still become the start of harmony
// messages as more arrives.
func mayBeHarmonyStart(t string) bool {
	return strings.HasPrefix(hChannel, t) || strings.HasPrefix(hStart, t) || strings.HasPrefix("to=functions.", t)
}

// harmonyHeader reads a message's header: its recipient (to=…, a
// function's preferred over another's) and its channel.
func harmonyHeader(h string) (recipient, channel string) {
	word := func(s string) string {
		s = strings.TrimLeft(s, " ")
		if k := strings.IndexAny(s, " <"); k >= 0 {
			s = s[:k]
		}
		return s
	}
	for rest := h; ; {
		k := strings.Index(rest, "to=")
		if k < 0 {
			break
		}
		rest = rest[k+len("to="):]
		if w := word(rest); w != "assistant" && w != "user" && w != "all" && (recipient == "" || strings.HasPrefix(w, "functions.")) {
			recipient = w
		}
	}
	if k := strings.LastIndex(h, hChannel); k >= 0 {
		channel = word(h[k+len(hChannel):])
	}
	return recipient, channel
}

// thinkStops and harmonyStops are what ends reasoning and a harmony
// message's body, whose first bytes wait for the next ones.
var (
	thinkStops   = []string{"</think>", kimiSection, kimiCall}
	harmonyStops = []string{hEnd, hCall, hReturn, hStart, hChannel}
)

// harmonyBodyEnd finds where a message's body ends: its end token (skip
// is its length) or the next message's start (skip 0); -1 when the text
// ends first.
func harmonyBodyEnd(s string) (at, skip int) {
	at = -1
	for _, t := range harmonyStops {
		if k := strings.Index(s, t); k >= 0 && (at < 0 || k < at) {
			at, skip = k, len(t)
			if t == hStart || t == hChannel {
				skip = 0
			}
		}
	}
	return at, skip
}

// readHarmony reads harmony messages: the analysis channel is reasoning,
// final and commentary are the answer, a message to functions.NAME is a
// call (when o allows harmony), one to a built-in tool (python, browser,
// container) is dropped, as llama.cpp does: zot has none.
func readHarmony(s string, o scanOptions) (thinking string, scan textScan) {
	var thoughts, texts []string
	bad := false
	// A call's <|call|> ends the model's turn: messages a server let it
	// write after one answer results it has not seen, and are left out,
	// as sglang does.
	keptTexts, keptThoughts := -1, -1
	for pos := 0; pos < len(s); {
		rest := s[pos:]
		k := strings.Index(rest, hMessage)
		if k < 0 {
			if r, _ := harmonyHeader(rest); strings.HasPrefix(r, "functions.") && !o.ended && o.allow&fmtHarmony != 0 {
				scan.cut, scan.name, scan.cutText = true, strings.TrimPrefix(r, "functions."), strings.TrimSpace(rest)
			}
			break
		}
		recipient, channel := harmonyHeader(rest[:k])
		body := rest[k+len(hMessage):]
		end, skip := harmonyBodyEnd(body)
		next := len(s)
		if end >= 0 {
			next = pos + k + len(hMessage) + end + skip
			body = body[:end]
		}
		switch {
		case strings.HasPrefix(recipient, "functions.") && o.allow&fmtHarmony != 0:
			name := strings.TrimPrefix(recipient, "functions.")
			if end < 0 && !o.ended {
				scan.cut, scan.name, scan.cutText = true, name, strings.TrimSpace(rest)
				break
			}
			args := strings.TrimSpace(body)
			if args == "" {
				args = "{}"
			}
			if !validCallName(name) || !json.Valid([]byte(args)) || !isJSONObject(json.RawMessage(args)) || len(scan.calls) >= maxTextCalls {
				bad = true
				texts = append(texts, body)
				break
			}
			p := callScanner{}
			p.add(name, json.RawMessage(args))
			p.out[0].src = s[pos:next]
			if len(scan.calls) == 0 {
				keptTexts, keptThoughts = len(texts), len(thoughts)
			}
			scan.calls = append(scan.calls, p.out[0])
			scan.format = fmtHarmony
		case recipient != "" && !strings.HasPrefix(recipient, "functions."):
		case channel == "analysis":
			thoughts = append(thoughts, body)
		default:
			if body = strings.TrimSpace(body); body != "" {
				texts = append(texts, body)
			}
		}
		pos = next
	}
	if bad {
		scan.calls, scan.format = nil, 0
	} else if len(scan.calls) > 0 {
		texts, thoughts = texts[:keptTexts], thoughts[:keptThoughts]
	}
	scan.prose = strings.Join(texts, "\n\n")
	return strings.TrimSpace(strings.Join(thoughts, "\n\n")), scan
}

// replyState is where a streaming reply's text stands.
type replyState int8

const (
	rsStart       replyState = iota // nothing but white space yet
	rsThink                         // inside the reasoning
	rsAfterThink                    // after </think>, white space
	rsText                          // the answer
	rsHeld                          // a call, perhaps, held until the end
	rsHarmonyHead                   // inside a harmony message's header
	rsHarmonyBody                   // inside its body
)

// replyReader stands between a local server's stream and whoever shows
// it: the text's reasoning goes out as thinking, a call being written is
// held back (a marker's first bytes too, until the next show they start
// none), everything else passes. finish reads the whole text once the
// stream ended. Used by one stream's goroutine.
type replyReader struct {
	plan    replyPlan
	on      func(StreamEvent)
	markers []string // the call markers of the plan's formats, and </think>

	raw         strings.Builder
	state       replyState
	pos         int // raw[:pos] is shown, or held from held on
	held        int
	skipTo      int // the marker before this starts no call
	checked     int // how much was held at the last look whether it may still be a call
	shown       strings.Builder
	thought     strings.Builder // the reasoning shown
	thinkCall   bool            // what is held began inside an open <think>
	heldThought bool            // some reasoning was held
	native      bool            // the server sent reasoning of its own
	opened      bool            // the text opened <think>
	lone        bool            // the text's reasoning ended in a lone </think>
	loneShown   int             // how much of shown came before that </think>: reasoning, read whole
	harmony     bool            // what is held is harmony messages
	hKind       byte            // what a harmony body is: 'r' reasoning, 't' answer
	hNewText    bool            // a harmony answer message began and showed nothing yet
}

func newReplyReader(plan replyPlan, on func(StreamEvent)) *replyReader {
	return &replyReader{plan: plan, on: on, held: -1, markers: append(callMarkers(plan.formats), "</think>")}
}

// event takes one piece of the stream.
func (r *replyReader) event(se StreamEvent) {
	switch se.Type {
	case "text":
		r.raw.WriteString(se.Delta)
		r.advance()
	case "thinking":
		r.native = true
		r.on(se)
	default:
		r.on(se)
	}
}

func (r *replyReader) showText(s string) {
	if s == "" {
		return
	}
	if r.hNewText {
		r.hNewText = false
		if r.shown.Len() > 0 {
			s = "\n\n" + s
		}
	}
	r.shown.WriteString(s)
	r.on(StreamEvent{Type: "text", Delta: s})
}

func (r *replyReader) showThinking(s string) {
	if s != "" {
		r.thought.WriteString(s)
		r.on(StreamEvent{Type: "thinking", Delta: s})
	}
}

// hold keeps everything from pos on back until the end, or until it
// plainly starts no call.
func (r *replyReader) hold() {
	r.held, r.checked, r.state = r.pos, 0, rsHeld
}

// holdHarmony keeps the harmony messages from pos on back until the end.
func (r *replyReader) holdHarmony() {
	r.hold()
	r.harmony = true
}

// stops are what the answer's text is watched for: the markers of calls,
// and </think> while it may be a lone one.
func (r *replyReader) stops() []string {
	if r.native || r.opened || r.lone {
		return r.markers[:len(r.markers)-1]
	}
	return r.markers
}

// advance shows what it can of the text that arrived.
func (r *replyReader) advance() {
	s := r.raw.String()
	for {
		rest := s[r.pos:]
		switch r.state {
		case rsStart:
			t := strings.TrimLeft(rest, " \t\r\n")
			if t == "" {
				return
			}
			start := r.pos // an answer keeps its white space, as it is stored
			r.pos = len(s) - len(t)
			switch {
			case r.native:
				r.pos, r.state = start, rsText
			case strings.HasPrefix(t, "<think>"):
				r.pos += len("<think>")
				r.opened, r.state = true, rsThink
			case isHarmonyStart(t):
				r.state = rsHarmonyHead
			case strings.HasPrefix("<think>", t) || mayBeHarmonyStart(t):
				r.pos = start
				return
			case r.plan.thinksFirst:
				r.state = rsThink
			case r.plan.formats&fmtJSON != 0 && t[0] == '{':
				r.hold()
			default:
				r.pos, r.state = start, rsText
			}
		case rsThink:
			end, skip := thinkEnd(rest, r.plan.formats&fmtKimi != 0)
			stops := thinkStops
			if r.opened && r.plan.formats != 0 {
				// A call inside a <think> that never closes ends it
				// (read's business): held from its marker until the end.
				stops = append(r.markers[:len(r.markers):len(r.markers)], kimiSection, kimiCall)
				k, _, _ := nextMarker(rest, max(r.pos, r.skipTo)-r.pos, r.plan.formats)
				if k >= 0 && (end < 0 || k < end) {
					// Looked at for a code fence only where a marker is.
					k = firstCallMarker(r.thought.String()+rest, r.thought.Len()+k, r.plan.formats) - r.thought.Len()
				}
				if k >= 0 && (end < 0 || k < end) {
					r.showThinking(rest[:k])
					r.pos += k
					r.hold()
					r.thinkCall, r.heldThought = true, true
					continue
				}
			}
			if end < 0 {
				n := len(rest) - holdBack(rest, stops)
				r.showThinking(rest[:n])
				r.pos += n
				return
			}
			r.showThinking(rest[:end])
			r.pos += end + skip
			if skip == 0 {
				r.hold()
			} else {
				r.opened, r.state = true, rsAfterThink
			}
		case rsAfterThink:
			t := strings.TrimLeft(rest, " \t\r\n")
			r.pos = len(s) - len(t)
			if t == "" {
				return
			}
			r.state = rsText
		case rsText:
			at, think := r.nextStop(s)
			if at < 0 {
				// White space at the end waits for what follows it: the
				// answer read whole ends without it.
				n := len(strings.TrimRight(rest[:len(rest)-holdBack(rest, r.stops())], " \t\r\n"))
				r.showText(rest[:n])
				r.pos += n
				return
			}
			r.showText(s[r.pos:at])
			r.pos = at
			if think {
				r.pos += len("</think>")
				r.lone, r.loneShown, r.state = true, r.shown.Len(), rsAfterThink
			} else {
				r.hold()
			}
		case rsHeld:
			if !r.stillACall(s) {
				r.pos, r.state, r.held = r.held, rsText, -1
				if r.thinkCall {
					r.state, r.thinkCall = rsThink, false
				}
				continue
			}
			return
		case rsHarmonyHead:
			k := strings.Index(rest, hMessage)
			if k < 0 {
				if len(rest) > maxHarmonyHeader {
					r.holdHarmony() // no header this long: read whole at the end
				}
				return
			}
			recipient, channel := harmonyHeader(rest[:k])
			switch {
			case recipient != "":
				r.holdHarmony()
				return
			case channel == "analysis":
				r.hKind = 'r'
			default:
				r.hKind, r.hNewText = 't', true
			}
			r.pos += k + len(hMessage)
			r.state = rsHarmonyBody
		case rsHarmonyBody:
			end, skip := harmonyBodyEnd(rest)
			n := end
			if end < 0 {
				n = len(rest) - holdBack(rest, harmonyStops)
			}
			if r.hKind == 'r' {
				r.showThinking(rest[:n])
				r.pos += n
			} else {
				// An answer's message is shown without the white space
				// around it, as it is read whole.
				body := rest[:n]
				if r.hNewText {
					body = strings.TrimLeft(body, " \t\r\n")
					r.pos += n - len(body)
				}
				body = strings.TrimRight(body, " \t\r\n")
				r.showText(body)
				r.pos += len(body)
			}
			if end < 0 {
				return
			}
			r.pos = len(s) - len(rest) + end + skip
			r.state = rsHarmonyHead
		}
	}
}

// nextStop finds the first stop in s after pos outside a code fence: a
// call's marker, or a lone </think> (think).
func (r *replyReader) nextStop(s string) (at int, think bool) {
	for from := max(r.pos, r.skipTo); ; {
		at, _, marker := nextMarker(s, from, r.plan.formats)
		lone := -1
		if !r.native && !r.opened && !r.lone {
			if k := strings.Index(s[from:], "</think>"); k >= 0 && (at < 0 || from+k < at) {
				lone, at, marker = from+k, from+k, "</think>"
			}
		}
		if at < 0 {
			return -1, false
		}
		text := r.shown.String() + s[r.pos:at]
		if !inCodeFence(text) && (lone < 0 || loneThinkEnd(text+"</think>") >= 0) {
			return at, lone >= 0
		}
		from = at + len(marker)
	}
}

// stillACall says whether the text held may still be a call: it is
// looked at again each time it grew by half (so a long call costs a few
// looks, not one per piece). One that plainly is none is let go.
func (r *replyReader) stillACall(s string) bool {
	held := s[r.held:]
	if len(held)-r.checked < max(64, r.checked/2) {
		return true
	}
	r.checked = len(held)
	if r.harmony || r.plan.formats == 0 {
		return true // a harmony message to a tool is read at the end
	}
	none, marker := heldIsNoCall(held, r.plan)
	if none && marker != "" {
		r.skipTo = r.held + len(marker)
	}
	return !none
}

// heldIsNoCall says whether text held from a call's marker on (or from a
// bare JSON object) plainly is no call, however it goes on, and the
// marker it began with ("" for JSON). What may still become a call is
// held on: one judged none too early would be shown as text and read as
// a call at the end.
func heldIsNoCall(held string, plan replyPlan) (none bool, marker string) {
	p := callScanner{s: held, allow: plan.formats, types: plan.types}
	if strings.HasPrefix(held, "{") {
		p.json()
		return p.st == scanInvalid, ""
	}
	for i := range envelopes {
		e := &envelopes[i]
		for _, m := range e.markers {
			if e.formats&plan.formats != 0 && strings.HasPrefix(held, m) {
				e.parse(&p)
				return p.st == scanInvalid, m
			}
		}
	}
	return false, ""
}

// holdBack is how many bytes at the end of s may be the start of one of
// stops: a piece that begins with a stop's first byte.
func holdBack(s string, stops []string) int {
	n := 0
	for _, m := range stops {
		tail := s[max(0, len(s)-len(m)+1):]
		for i := strings.IndexByte(tail, m[0]); i >= 0 && len(tail)-i > n; {
			if strings.HasPrefix(m, tail[i:]) {
				n = len(tail) - i
				break
			}
			k := strings.IndexByte(tail[i+1:], m[0])
			if k < 0 {
				break
			}
			i += 1 + k
		}
	}
	return n
}

// finish reads the whole text of the reply once the stream ended, shows
// what the stream held back of its answer and its calls, and puts the
// reply's content in order: the reasoning, the answer, the calls.
func (r *replyReader) finish(reply *Reply) replyParts {
	nativeCalls := len(Message{Content: reply.Content}.ToolCalls()) > 0
	parts := r.plan.read(r.raw.String(), r.native, !nativeCalls, reply.Stop != StopLength)
	const space = " \t\r\n"
	if r.heldThought {
		// Reasoning held as a call it turned out not to be.
		shown := strings.TrimLeft(r.thought.String(), space)
		rest, ok := strings.CutPrefix(parts.thinking, shown)
		if !ok {
			rest, ok = strings.CutPrefix(parts.thinking, strings.TrimSpace(shown))
		}
		if ok {
			r.showThinking(rest)
		}
	}
	// What the stream showed before a lone </think> the whole text reads
	// as reasoning, which is not the answer's beginning: all it showed,
	// when that </think> came in what it held.
	shown := r.shown.String()
	switch {
	case parts.lone && r.lone:
		shown = shown[r.loneShown:]
	case parts.lone:
		shown = ""
	}
	if rest, ok := strings.CutPrefix(strings.TrimLeft(parts.text, space), strings.TrimLeft(shown, space)); ok && rest != "" {
		r.on(StreamEvent{Type: "text", Delta: rest})
	}
	var blocks []Block
	for _, c := range parts.calls {
		blocks = append(blocks, Block{Type: BlockToolCall, ID: textCallID(), Name: c.Name, Args: c.Args, FromText: true})
	}
	if parts.cut != nil {
		// Not a whole JSON object: the agent answers it as a call the
		// output limit cut, and runs nothing.
		blocks = append(blocks, Block{Type: BlockToolCall, ID: textCallID(), Name: parts.cut.Name, Args: parts.cut.Args, FromText: true})
	}
	for _, b := range blocks {
		r.on(StreamEvent{Type: "tool_start", ID: b.ID, Name: b.Name})
		r.on(StreamEvent{Type: "tool_args", ID: b.ID, Delta: string(b.Args)})
		r.on(StreamEvent{Type: "tool_end", ID: b.ID})
	}
	reply.Content = arrange(reply.Content, parts, blocks)
	if len(parts.calls) > 0 && parts.cut == nil {
		reply.Stop = StopToolUse // a cut call keeps the stop that tells the agent so
	}
	return parts
}

// settle puts in order the content of a reply the stream failed to
// finish: its reasoning split off, no call read from what is left.
func (r *replyReader) settle(reply *Reply) {
	reply.Content = arrange(reply.Content, r.plan.read(r.raw.String(), r.native, false, false), nil)
}

// arrange is content with its text block replaced by what the text held:
// the reasoning (joined to the server's own, if any), the answer, and
// after everything the calls read from it.
func arrange(content []Block, parts replyParts, calls []Block) []Block {
	var out []Block
	thought := parts.thinking == ""
	for _, b := range content {
		switch {
		case b.Type == BlockThinking && !b.Redacted && !thought:
			b.Text = strings.TrimSpace(b.Text + "\n\n" + parts.thinking)
			thought = true
			out = append(out, b)
		case b.Type == BlockText:
			if !thought {
				out = append(out, Block{Type: BlockThinking, Text: parts.thinking})
				thought = true
			}
			if parts.text != "" {
				out = append(out, TextBlock(parts.text))
			}
		default:
			out = append(out, b)
		}
	}
	return append(out, calls...)
}

// replyMemory is what a local server's replies taught zot about a model
// during the run: that its template opens <think> (a lone </think> came),
// and the field its reasoning streams in. Safe for concurrent use.
type replyMemory struct {
	mu        sync.Mutex
	thinks    map[string]bool
	reasoning map[string]string
}

func (m *replyMemory) thinksFirst(model string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.thinks[model]
}

// learnThinksFirst remembers that model's template opens <think>: a lone
// </think> ended its reasoning.
func (m *replyMemory) learnThinksFirst(model string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.thinks == nil {
		m.thinks = map[string]bool{}
	}
	m.thinks[model] = true
}

// learnReasoningField remembers the field model's reasoning streamed in.
func (m *replyMemory) learnReasoningField(model, field string) {
	if field == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reasoning == nil {
		m.reasoning = map[string]string{}
	}
	m.reasoning[model] = field
}

// reasoningKey is the field of an assistant message that carries its
// reasoning back to a local server: reasoning_content when models.json
// asks for it (DeepSeek-style servers), "reasoning" for vLLM, which
// renamed reasoning_content so in 0.17 and reads it back there, and for a
// server that streamed its reasoning in that field; otherwise none, as a
// chat template that strips past reasoning (Qwen3's, DeepSeek's) would
// drop it.
func (l *localServer) reasoningKey(model, kind string, compat Compat) string {
	if key := compat.reasoningKey(); key != "" {
		return key
	}
	l.replies.mu.Lock()
	streamed := l.replies.reasoning[model]
	l.replies.mu.Unlock()
	if kind == "vllm" || streamed == "reasoning" {
		return "reasoning"
	}
	return ""
}

// reasoningKey is the field models.json asks reasoning to go back in.
func (c Compat) reasoningKey() string {
	if isTrue(c.RequiresReasoningContent, false) {
		return "reasoning_content"
	}
	return ""
}

// echoNotice says why calls the model wrote did not run.
func echoNotice(server string, parts replyParts) string {
	if !parts.echoed {
		return ""
	}
	return fmt.Sprintf("%s: the reply ends in a tool call that repeats text the model was given (a tool result, a file, the prompt); zot did not run it: a model that copies text has not chosen to call anything", server)
}
