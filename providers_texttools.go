package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// Tool calls written as text. A model whose server does not parse its
// tool calls (a chat template without tool support, vLLM without the
// right --tool-call-parser, an ollama template that does not parse, a
// gateway) writes them into its answer in its training's format. Calls
// that end a reply are read back into real tool calls, which then meet
// every gate a native one meets. A call inside a fenced code block is a
// model showing a format, not using it, and stays text. Which formats are
// read from which reply is providers_textreply.go's business.
//
// The formats, as the public parsers' tests have them (testdata/texttools):
//
//	hermes     <tool_call>{"name": "read", "arguments": {"path": "a"}}</tool_call>        Qwen2.5, Qwen3, QwQ, Hermes, Granite
//	qwen3-xml  <tool_call><function=read><parameter=path>a</parameter></function></tool_call>   Qwen3-Coder, Qwen3.5 (the first <tool_call> may be left out)
//	glm        <tool_call>read<arg_key>path</arg_key><arg_value>a</arg_value></tool_call>   GLM-4.5, 4.6, 4.7
//	llama      <|python_tag|>{"name": "read", "parameters": {"path": "a"}}                   Llama 3.x (calls joined by ";")
//	json       {"name": "read", "parameters": {"path": "a"}}                                  Llama 3.x: the whole reply, nothing else
//	mistral    [TOOL_CALLS][{"name": "read", "arguments": {…}}], [TOOL_CALLS]read[ARGS]{…}   Mistral, Devstral ([CALL_ID]id may precede [ARGS])
//	kimi       <|tool_calls_section_begin|><|tool_call_begin|>functions.read:0<|tool_call_argument_begin|>{…}<|tool_call_end|><|tool_calls_section_end|>
//	deepseek   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read\n```json\n{…}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>   V3, R1
//	           <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read<｜tool▁sep｜>{…}<｜tool▁call▁end｜><｜tool▁calls▁end｜>                       V3.1
//	dsml       <｜DSML｜function_calls><｜DSML｜invoke name="read"><｜DSML｜parameter name="path" string="true">a</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>   V3.2
//	harmony    <|channel|>commentary to=functions.read <|constrain|>json<|message|>{…}<|call|>   gpt-oss (read with its channels, providers_textreply.go)
//
// The XML forms write each argument as text; the tool's JSON schema types
// it: a number, a boolean, null, an object or an array where the schema
// allows one and the text is one, the text itself (verbatim, new lines
// and all) otherwise.

// textCall is one tool call read from text; src is the text of the
// envelope it came from.
type textCall struct {
	Name string
	Args json.RawMessage
	src  string
}

// textFormat is a set of tool-call formats, one bit each.
type textFormat uint16

const (
	fmtHermes textFormat = 1 << iota
	fmtQwenXML
	fmtGLM
	fmtLlama
	fmtJSON
	fmtMistral
	fmtKimi
	fmtDeepSeek
	fmtDSML
	fmtHarmony

	allTextFormats = fmtHermes | fmtQwenXML | fmtGLM | fmtLlama | fmtJSON | fmtMistral | fmtKimi | fmtDeepSeek | fmtDSML | fmtHarmony
)

var textFormatNames = []string{"hermes", "qwen3-xml", "glm", "llama", "json", "mistral", "kimi", "deepseek", "dsml", "harmony"}

// String names the formats of f, joined by "+".
func (f textFormat) String() string {
	var names []string
	for i, n := range textFormatNames {
		if f&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, "+")
}

// Bounds on what is read as calls: a reply that ends in a thousand calls
// is not a model using its tools, and a reply full of markers that start
// nothing is not worth a thousand attempts.
const (
	maxTextCalls    = 16
	maxTextCallName = 128
	maxMarkerTries  = 64
)

// The markers of the envelopes.
const (
	kimiSection    = "<|tool_calls_section_begin|>"
	kimiSectionEnd = "<|tool_calls_section_end|>"
	kimiCall       = "<|tool_call_begin|>"
	kimiArgs       = "<|tool_call_argument_begin|>"
	kimiCallEnd    = "<|tool_call_end|>"
	dsCalls        = "<｜tool▁calls▁begin｜>"
	dsCallsEnd     = "<｜tool▁calls▁end｜>"
	dsCall         = "<｜tool▁call▁begin｜>"
	dsCallEnd      = "<｜tool▁call▁end｜>"
	dsSep          = "<｜tool▁sep｜>"
	dsEndOfText    = "<｜end▁of▁sentence｜>"
	dsmlCalls      = "<｜DSML｜function_calls>"
	dsmlToolCalls  = "<｜DSML｜tool_calls>"
)

// envelope is one way a call begins in text: the markers that open it,
// the formats it may hold, and the parser of what follows.
type envelope struct {
	markers []string
	formats textFormat
	parse   func(p *callScanner)
}

var envelopes = []envelope{
	{[]string{"<tool_call>"}, fmtHermes | fmtQwenXML | fmtGLM, parseToolCallTag},
	{[]string{"<function="}, fmtQwenXML, parseBareFunction},
	{[]string{"<|python_tag|>"}, fmtLlama, parsePythonTag},
	{[]string{"[TOOL_CALLS]"}, fmtMistral, parseMistral},
	{[]string{kimiSection, kimiCall}, fmtKimi, parseKimi},
	{[]string{dsCalls}, fmtDeepSeek, parseDeepSeek},
	{[]string{dsmlCalls, dsmlToolCalls}, fmtDSML, parseDSML},
}

// callMarkers are the markers of the envelopes of the formats in allow.
func callMarkers(allow textFormat) []string {
	var out []string
	for _, e := range envelopes {
		if e.formats&allow != 0 {
			out = append(out, e.markers...)
		}
	}
	return out
}

// nextMarker finds the first marker of an envelope of allow at or after
// from.
func nextMarker(text string, from int, allow textFormat) (at int, env *envelope, marker string) {
	at = -1
	for i := range envelopes {
		e := &envelopes[i]
		if e.formats&allow == 0 {
			continue
		}
		for _, m := range e.markers {
			if k := strings.Index(text[from:], m); k >= 0 && (at < 0 || from+k < at) {
				at, env, marker = from+k, e, m
			}
		}
	}
	return at, env, marker
}

// textScan is what scanTextCalls found in a reply's text: the text
// outside the calls and the calls; or, when the text ends inside a call,
// where that call began and its tool's name if it was written.
type textScan struct {
	prose   string
	calls   []textCall
	format  textFormat
	cut     bool
	cutText string
	name    string
}

// scanOptions are what a reply's text is read with: the formats, the
// tools' parameter types, the tools a bare JSON reply may call, and
// whether the reply ended by itself (then an end marker a model leaves
// out, as Kimi's do, is not waited for).
type scanOptions struct {
	allow textFormat
	types *toolTypes
	known func(name string) bool
	ended bool
}

// scanTextCalls reads the tool calls of text: complete envelopes outside
// code fences, the last one ending the text. Text between calls stays
// text; text after the last call means the model went on writing instead
// of waiting for the results, and none is read.
func scanTextCalls(text string, o scanOptions) textScan {
	text = strings.TrimRight(text, " \t\r\n")
	if o.allow&fmtDeepSeek != 0 {
		text = strings.TrimRight(strings.TrimSuffix(text, dsEndOfText), " \t\r\n")
	}
	if o.allow&fmtJSON != 0 && o.known != nil {
		if s := strings.TrimLeft(text, " \t\r\n"); strings.HasPrefix(s, "{") {
			if calls, ok := decodeCallSequence(s); ok && allKnown(calls, o.known) {
				for i := range calls {
					calls[i].src = s
				}
				return textScan{calls: calls, format: fmtJSON}
			}
		}
	}
	var prose []string // the text before each call read, white space trimmed
	var calls []textCall
	var format textFormat
	i, from := 0, 0
	for tries := 0; tries < maxMarkerTries; tries++ {
		at, env, marker := nextMarker(text, from, o.allow)
		if at < 0 {
			break
		}
		if inCodeFence(strings.Join(prose, "\n\n") + "\n\n" + text[i:at]) {
			from = at + len(marker)
			continue
		}
		p := callScanner{s: text, i: at, allow: o.allow, types: o.types, ended: o.ended}
		env.parse(&p)
		switch p.st {
		case scanOK:
			for k := range p.out {
				p.out[k].src = text[at:p.i]
			}
			prose = appendProse(prose, text[i:at])
			calls = append(calls, p.out...)
			format |= p.format
			i, from = p.i, p.i
			if len(calls) > maxTextCalls {
				return textScan{prose: text}
			}
		case scanIncomplete:
			prose = appendProse(prose, text[i:at])
			return textScan{prose: strings.Join(prose, "\n\n"), calls: calls, format: format, cut: true, cutText: text[at:], name: p.name}
		default:
			from = at + len(marker)
		}
	}
	if len(calls) == 0 || strings.TrimSpace(text[i:]) != "" {
		return textScan{prose: text}
	}
	return textScan{prose: strings.Join(prose, "\n\n"), calls: calls, format: format}
}

func appendProse(prose []string, s string) []string {
	if s = strings.TrimSpace(s); s != "" {
		prose = append(prose, s)
	}
	return prose
}

func allKnown(calls []textCall, known func(string) bool) bool {
	for _, c := range calls {
		if known == nil || !known(c.Name) {
			return false
		}
	}
	return true
}

// scanStatus is how a parse went: whole, cut short by the end of the
// text, or not a call.
type scanStatus int8

const (
	scanOK scanStatus = iota
	scanIncomplete
	scanInvalid
)

// callScanner reads one envelope of calls from s at i. A failure sticks:
// the first one decides the status, later reads do nothing.
type callScanner struct {
	s      string
	i      int
	allow  textFormat
	types  *toolTypes
	ended  bool
	st     scanStatus
	name   string // the tool of the call being read, once its name is whole
	format textFormat
	out    []textCall
}

func (p *callScanner) rest() string { return p.s[p.i:] }

func (p *callScanner) failed() bool { return p.st != scanOK }

func (p *callScanner) fail(st scanStatus) bool {
	if p.st == scanOK {
		p.st = st
	}
	return false
}

func (p *callScanner) ws() { p.i = len(p.s) - len(strings.TrimLeft(p.rest(), " \t\r\n")) }

// need says whether the envelope may hold format f here.
func (p *callScanner) need(f textFormat) bool {
	if p.failed() {
		return false
	}
	if p.allow&f == 0 {
		return p.fail(scanInvalid)
	}
	if p.format == 0 {
		p.format = f
	}
	return true
}

// lit reads tok. Text that ends in the middle of it is incomplete.
func (p *callScanner) lit(tok string) bool {
	if p.failed() {
		return false
	}
	r := p.rest()
	if strings.HasPrefix(r, tok) {
		p.i += len(tok)
		return true
	}
	if len(r) < len(tok) && strings.HasPrefix(tok, r) {
		return p.fail(scanIncomplete)
	}
	return p.fail(scanInvalid)
}

// opt reads tok when the text holds it.
func (p *callScanner) opt(tok string) bool {
	if p.failed() {
		return false
	}
	r := p.rest()
	if strings.HasPrefix(r, tok) {
		p.i += len(tok)
		return true
	}
	if r != "" && len(r) < len(tok) && strings.HasPrefix(tok, r) {
		p.fail(scanIncomplete)
	}
	return false
}

// upto reads the text up to tok, and tok.
func (p *callScanner) upto(tok string) (string, bool) {
	if p.failed() {
		return "", false
	}
	r := p.rest()
	k := strings.Index(r, tok)
	if k < 0 {
		return "", p.fail(scanIncomplete)
	}
	p.i += k + len(tok)
	return r[:k], true
}

// json reads one JSON value.
func (p *callScanner) json() (json.RawMessage, bool) {
	if p.failed() {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(p.rest()))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, p.fail(scanIncomplete)
		}
		return nil, p.fail(scanInvalid)
	}
	p.i += int(dec.InputOffset())
	return raw, true
}

// attr reads ` key="value"`.
func (p *callScanner) attr(key string) (string, bool) {
	p.ws()
	p.lit(key + `="`)
	return p.upto(`"`)
}

// add takes a call whose name and arguments were read whole.
func (p *callScanner) add(name string, args json.RawMessage) bool {
	if p.failed() {
		return false
	}
	if !validCallName(name) || !json.Valid(args) || !isJSONObject(args) {
		return p.fail(scanInvalid)
	}
	var compact bytes.Buffer
	json.Compact(&compact, args)
	p.out = append(p.out, textCall{Name: name, Args: compact.Bytes()})
	if len(p.out) > maxTextCalls {
		return p.fail(scanInvalid)
	}
	return true
}

// value reads an argument's text up to the closing tag that ends it: one
// followed by the next argument or the end of the call (nexts). So a value
// may hold its own closing tag, as code does; an opening tag at the start
// of a line inside it pairs with the next closing one.
func (p *callScanner) value(open, close string, nexts ...string) (string, bool) {
	if p.failed() {
		return "", false
	}
	start, pos, depth := p.i, p.i, 0
	for {
		r := p.s[pos:]
		c := strings.Index(r, close)
		if c < 0 {
			return "", p.fail(scanIncomplete)
		}
		if o := strings.Index(r[:c], "\n"+open); o >= 0 {
			depth++
			pos += o + 1 + len(open)
			continue
		}
		end := pos + c
		pos = end + len(close)
		if depth > 0 {
			depth--
			continue
		}
		after := strings.TrimLeft(p.s[pos:], " \t\r\n")
		for _, n := range nexts {
			if strings.HasPrefix(after, n) || strings.HasPrefix(n, after) {
				p.i = pos
				return p.s[start:end], true
			}
		}
	}
}

// partialName is the tool name a cut JSON call has written whole.
func partialName(s string) string {
	if m := partialCallName().FindStringSubmatch(s); m != nil && validCallName(m[1]) {
		return m[1]
	}
	return ""
}

var partialCallName = lazyRegexp(`"name"\s*:\s*"([^"]{1,128})"`)

// parseToolCallTag reads <tool_call>…</tool_call>: JSON inside (hermes),
// <function=…> (qwen3-xml), or a name and <arg_key> pairs (glm).
func parseToolCallTag(p *callScanner) {
	p.lit("<tool_call>")
	p.ws()
	r := p.rest()
	switch {
	case p.failed():
		return
	case strings.HasPrefix(r, "{"):
		if p.need(fmtHermes) {
			raw, ok := p.json()
			if !ok {
				p.name = partialName(r)
				return
			}
			c, ok := decodeTextCall(raw)
			if !ok {
				p.fail(scanInvalid)
				return
			}
			p.name = c.Name
			p.add(c.Name, c.Args)
		}
	case strings.HasPrefix(r, "<function="):
		if p.need(fmtQwenXML) {
			p.xmlFunction()
		}
	case r == "" || strings.HasPrefix("<function=", r):
		p.fail(scanIncomplete)
		return
	default:
		if p.need(fmtGLM) {
			p.glmCall()
		}
		return
	}
	p.ws()
	p.lit("</tool_call>")
}

// parseBareFunction reads <function=…>…</function> whose <tool_call> the
// model left out (Qwen3-Coder does, for its first call).
func parseBareFunction(p *callScanner) {
	if p.need(fmtQwenXML) {
		p.xmlFunction()
		p.ws()
		p.opt("</tool_call>")
	}
}

// xmlFunction reads <function=NAME><parameter=P>value</parameter>…</function>.
// A value loses one new line after its opening tag and one before its
// closing one, as the template writes them.
func (p *callScanner) xmlFunction() {
	p.lit("<function=")
	name, ok := p.nameThen(">")
	if !ok {
		return
	}
	p.name = name
	// A call whose parameters all lack their </parameter> (sglang's
	// tests have one) ends each value where the next begins.
	body, _, whole := strings.Cut(p.rest(), "</function>")
	unclosed := whole && !strings.Contains(body, "</parameter>")
	p.args(name, "</function>", func() (string, json.RawMessage, bool) {
		p.lit("<parameter=")
		key, _ := p.nameThen(">")
		var v string
		ok := !p.failed()
		if unclosed && ok {
			v, _, _ = strings.Cut(p.rest(), "</function>")
			v, _, _ = strings.Cut(v, "<parameter=")
			p.i += len(v)
		} else {
			v, ok = p.value("<parameter=", "</parameter>", "<parameter=", "</function>")
		}
		v = strings.TrimSuffix(strings.TrimPrefix(v, "\n"), "\n")
		return key, p.types.value(name, key, v), ok
	})
}

// args reads the arguments of a call to name up to end, each by arg, and
// takes the call.
func (p *callScanner) args(name, end string, arg func() (key string, v json.RawMessage, ok bool)) {
	var args argsBuilder
	for !p.failed() {
		p.ws()
		if p.opt(end) {
			p.add(name, args.json())
			return
		}
		if key, v, ok := arg(); ok {
			args.set(key, v)
		}
	}
}

// nameThen reads a tool or parameter name and the text that ends it.
func (p *callScanner) nameThen(end string) (string, bool) {
	if p.failed() {
		return "", false
	}
	r := p.rest()
	n := 0
	for n < len(r) && n <= maxTextCallName && isToolNameByte(r[n]) {
		n++
	}
	if n == len(r) {
		return "", p.fail(scanIncomplete)
	}
	if !validCallName(r[:n]) {
		return "", p.fail(scanInvalid)
	}
	p.i += n
	if end == "" {
		return r[:n], true
	}
	return r[:n], p.lit(end)
}

// glmCall reads NAME<arg_key>k</arg_key><arg_value>v</arg_value>…</tool_call>.
func (p *callScanner) glmCall() {
	name, ok := p.nameThen("")
	from := p.i
	p.ws()
	switch {
	case !ok:
		return
	case p.rest() == "":
		if p.i > from {
			p.name = name // a new line ended it
		}
		p.fail(scanIncomplete)
		return
	case !strings.HasPrefix(p.rest(), "<"):
		p.fail(scanInvalid)
		return
	}
	p.name = name
	p.args(name, "</tool_call>", func() (string, json.RawMessage, bool) {
		p.lit("<arg_key>")
		key, _ := p.upto("</arg_key>")
		if key = strings.TrimSpace(key); !p.failed() && !validCallName(key) {
			p.fail(scanInvalid)
		}
		p.ws()
		p.lit("<arg_value>")
		v, ok := p.value("<arg_value>", "</arg_value>", "<arg_key>", "</tool_call>")
		return key, p.types.value(name, key, v), ok
	})
}

func isToolNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-'
}

// parsePythonTag reads <|python_tag|> and the calls after it, joined by
// ";" or new lines.
func parsePythonTag(p *callScanner) {
	p.lit("<|python_tag|>")
	if !p.need(fmtLlama) {
		return
	}
	for !p.failed() {
		p.ws()
		from := p.i
		raw, ok := p.json()
		if !ok {
			p.name = partialName(p.s[from:])
			return
		}
		c, ok := decodeTextCall(raw)
		if !ok {
			p.fail(scanInvalid)
			return
		}
		p.name = c.Name
		p.add(c.Name, c.Args)
		p.ws()
		if !p.opt(";") && !strings.HasPrefix(p.rest(), "{") {
			return
		}
	}
}

// parseMistral reads "[TOOL_CALLS]" and a JSON array of calls after it, or
// one name[ARGS]{…} pair (with [CALL_ID]id before [ARGS], as Mistral
// Small 3.2 writes them); each further pair has its own marker.
func parseMistral(p *callScanner) {
	p.lit("[TOOL_CALLS]")
	if !p.need(fmtMistral) {
		return
	}
	p.ws()
	r := p.rest()
	if strings.HasPrefix(r, "[") {
		raw, ok := p.json()
		if !ok {
			p.name = partialName(r)
			return
		}
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
			p.fail(scanInvalid)
			return
		}
		for _, item := range list {
			c, ok := decodeTextCall(item)
			if !ok {
				p.fail(scanInvalid)
				return
			}
			p.name = c.Name
			p.add(c.Name, c.Args)
		}
		return
	}
	end := strings.Index(r, "[ARGS]")
	if c := strings.Index(r, "[CALL_ID]"); c >= 0 && (end < 0 || c < end) {
		end = c
	}
	if end < 0 {
		if len(r) <= maxTextCallName && !strings.ContainsFunc(r, func(c rune) bool { return c > 127 || !isToolNameByte(byte(c)) && !strings.ContainsRune("[] ", c) }) {
			p.fail(scanIncomplete)
		} else {
			p.fail(scanInvalid)
		}
		return
	}
	name := strings.TrimSpace(r[:end])
	if !validCallName(name) {
		p.fail(scanInvalid)
		return
	}
	p.name = name
	p.i += end
	if p.opt("[CALL_ID]") {
		p.upto("[ARGS]")
	} else {
		p.lit("[ARGS]")
	}
	if raw, ok := p.json(); ok {
		p.add(name, raw)
	}
}

// parseKimi reads a Kimi K2 section of calls. Outside a section each call
// has its own marker; the end markers may be left out (Kimi-K2-Thinking
// does) before another call, or at the end of a reply that ended by
// itself.
func parseKimi(p *callScanner) {
	if !p.need(fmtKimi) {
		return
	}
	section := p.opt(kimiSection)
	for !p.failed() {
		p.ws()
		if section && p.opt(kimiSectionEnd) {
			if len(p.out) == 0 {
				p.fail(scanInvalid)
			}
			return
		}
		if len(p.out) > 0 && (!section || p.ended && p.rest() == "") {
			return
		}
		p.lit(kimiCall)
		p.ws()
		id, ok := p.upto(kimiArgs)
		if !ok {
			return
		}
		name, ok := kimiName(strings.TrimSpace(id))
		if !ok {
			p.fail(scanInvalid)
			return
		}
		p.name = name
		raw, ok := p.json()
		if !ok {
			return
		}
		p.add(name, raw)
		p.ws()
		if !p.opt(kimiCallEnd) && !p.failed() {
			switch r := p.rest(); {
			case r == "" && !p.ended:
				p.fail(scanIncomplete)
			case r == "", strings.HasPrefix(r, kimiCall), strings.HasPrefix(r, kimiSectionEnd):
			case !p.ended && (strings.HasPrefix(kimiCall, r) || strings.HasPrefix(kimiSectionEnd, r)):
				p.fail(scanIncomplete) // the next marker, not whole yet
			default:
				p.fail(scanInvalid)
			}
		}
	}
}

// kimiName is the tool of a Kimi call id: functions.NAME:INDEX, or NAME:INDEX.
func kimiName(id string) (string, bool) {
	id = strings.TrimPrefix(id, "functions.")
	k := strings.LastIndexByte(id, ':')
	if k < 0 || k == len(id)-1 || strings.Trim(id[k+1:], "0123456789") != "" {
		return "", false
	}
	return id[:k], validCallName(id[:k])
}

// parseDeepSeek reads a DeepSeek section of calls: V3 and R1 write
// "function<｜tool▁sep｜>NAME" and the arguments in a json code fence, V3.1
// "NAME<｜tool▁sep｜>" and the arguments bare.
func parseDeepSeek(p *callScanner) {
	p.lit(dsCalls)
	if !p.need(fmtDeepSeek) {
		return
	}
	for !p.failed() {
		p.ws()
		if p.opt(dsCallsEnd) {
			if len(p.out) == 0 {
				p.fail(scanInvalid)
			}
			return
		}
		p.lit(dsCall)
		head, ok := p.upto(dsSep)
		if !ok {
			return
		}
		head = strings.TrimSpace(head)
		name := head
		fenced := head == "function" && !strings.HasPrefix(strings.TrimLeft(p.rest(), " \t\r\n"), "{")
		if fenced {
			line, _ := p.upto("\n")
			name = strings.TrimSpace(line)
		}
		if !p.failed() && !validCallName(name) {
			p.fail(scanInvalid)
			return
		}
		p.name = name
		p.ws()
		if fenced && !p.opt("```json") {
			p.opt("```")
		}
		raw, ok := p.json()
		if !ok {
			return
		}
		p.ws()
		if fenced {
			p.opt("```")
			p.ws()
		}
		p.lit(dsCallEnd)
		p.add(name, raw)
	}
}

// parseDSML reads DeepSeek V3.2's markup (V4 names its block tool_calls).
// A parameter with string="true" is text; string="false" JSON.
func parseDSML(p *callScanner) {
	if !p.need(fmtDSML) {
		return
	}
	end := "</｜DSML｜function_calls>"
	if !p.opt(dsmlCalls) {
		p.lit(dsmlToolCalls)
		end = "</｜DSML｜tool_calls>"
	}
	for !p.failed() {
		p.ws()
		if p.opt(end) {
			if len(p.out) == 0 {
				p.fail(scanInvalid)
			}
			return
		}
		p.lit("<｜DSML｜invoke")
		name, _ := p.attr("name")
		p.ws()
		p.lit(">")
		if !p.failed() && !validCallName(name) {
			p.fail(scanInvalid)
		}
		if p.failed() {
			return
		}
		p.name = name
		p.args(name, "</｜DSML｜invoke>", func() (string, json.RawMessage, bool) {
			p.lit("<｜DSML｜parameter")
			key, _ := p.attr("name")
			str, _ := p.attr("string")
			p.ws()
			p.lit(">")
			v, ok := p.value("<｜DSML｜parameter", "</｜DSML｜parameter>", "<｜DSML｜parameter", "</｜DSML｜invoke>")
			switch {
			case !ok:
				return "", nil, false
			case !validCallName(key) || str != "true" && str != "false":
				return "", nil, p.fail(scanInvalid)
			case str == "true":
				return key, stringJSON(v), true
			case json.Valid([]byte(strings.TrimSpace(v))):
				return key, json.RawMessage(strings.TrimSpace(v)), true
			}
			return key, p.types.value(name, key, v), true
		})
	}
}

// argsBuilder puts arguments read one by one into a JSON object, in the
// order written; a key written twice keeps its last value.
type argsBuilder struct {
	keys []string
	vals map[string]json.RawMessage
}

func (a *argsBuilder) set(key string, v json.RawMessage) {
	if a.vals == nil {
		a.vals = map[string]json.RawMessage{}
	}
	if _, ok := a.vals[key]; !ok {
		a.keys = append(a.keys, key)
	}
	a.vals[key] = v
}

func (a *argsBuilder) json() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range a.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(stringJSON(k))
		b.WriteByte(':')
		b.Write(a.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// stringJSON is s as a JSON string, <, > and & left as they are: the
// arguments of a call are read back by the model, not by a browser.
func stringJSON(s string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// toolTypes are the JSON types each tool's schema gives its parameters,
// read from a tool's schema the first time a call of it is read: a turn
// offers every tool (an MCP server's dozens among them), and most replies
// call none of them as text.
type toolTypes struct {
	tools []ToolSpec
	mu    sync.Mutex
	read  map[string]map[string][]string // by tool, then parameter
}

func schemaTypes(tools []ToolSpec) *toolTypes { return &toolTypes{tools: tools} }

// params are the types of tool's parameters: "type" (a name or a list),
// the alternatives of "anyOf" and "oneOf", and the kinds of an "enum"'s
// values. A schema that is not an object gives none.
func (tt *toolTypes) params(tool string) map[string][]string {
	if tt == nil {
		return nil
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if params, ok := tt.read[tool]; ok {
		return params
	}
	var params map[string][]string
	for _, t := range tt.tools {
		if t.Name != tool {
			continue
		}
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if json.Unmarshal(t.Schema, &s) == nil {
			params = map[string][]string{}
			for k, v := range s.Properties {
				params[k] = propertyTypes(v, 0)
			}
		}
		break
	}
	if tt.read == nil {
		tt.read = map[string]map[string][]string{}
	}
	tt.read[tool] = params
	return params
}

func propertyTypes(raw json.RawMessage, depth int) []string {
	var p struct {
		Type  json.RawMessage   `json:"type"`
		AnyOf []json.RawMessage `json:"anyOf"`
		OneOf []json.RawMessage `json:"oneOf"`
		Enum  []json.RawMessage `json:"enum"`
	}
	if depth > 4 || json.Unmarshal(raw, &p) != nil {
		return nil
	}
	var types []string
	var one string
	if json.Unmarshal(p.Type, &one) == nil {
		types = append(types, one)
	} else {
		json.Unmarshal(p.Type, &types)
	}
	for _, alt := range append(p.AnyOf, p.OneOf...) {
		types = append(types, propertyTypes(alt, depth+1)...)
	}
	for _, e := range p.Enum {
		types = append(types, valueKind(e))
	}
	return types
}

// valueKind names the kind of a JSON value as schemas name types.
func valueKind(v []byte) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return ""
	}
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// value is an argument written as text, as JSON: the value it spells when
// the tool's schema allows that kind of value for the parameter (a number
// for "integer", null for a nullable one, …); else the text, verbatim.
func (tt *toolTypes) value(tool, param, text string) json.RawMessage {
	types := tt.params(tool)[param]
	t := strings.TrimSpace(text)
	if t != "" && json.Valid([]byte(t)) {
		kind := valueKind([]byte(t))
		for _, want := range types {
			if kind != "string" && schemaKind(want) == kind {
				var b bytes.Buffer
				json.Compact(&b, []byte(t))
				return b.Bytes()
			}
		}
	}
	for _, want := range types {
		if schemaKind(want) == "boolean" && (strings.EqualFold(t, "true") || strings.EqualFold(t, "false")) {
			return json.RawMessage(strings.ToLower(t))
		}
	}
	return stringJSON(text)
}

// schemaKind is the JSON kind of a schema's type name, with the names
// templates and parsers also use (int, float, bool, dict, list).
func schemaKind(t string) string {
	switch t = strings.ToLower(t); {
	case t == "integer", t == "number", strings.HasPrefix(t, "int"), strings.HasPrefix(t, "float"):
		return "number"
	case t == "boolean", t == "bool":
		return "boolean"
	case t == "object", strings.HasPrefix(t, "dict"):
		return "object"
	case t == "array", strings.HasPrefix(t, "list"):
		return "array"
	}
	return t
}

// decodeCallSequence reads one call object, or several joined by ";" or
// new lines.
func decodeCallSequence(s string) ([]textCall, bool) {
	p := callScanner{s: s}
	var calls []textCall
	for {
		p.ws()
		raw, ok := p.json()
		if !ok {
			return nil, false
		}
		c, ok := decodeTextCall(raw)
		if !ok || len(calls) >= maxTextCalls {
			return nil, false
		}
		calls = append(calls, c)
		p.ws()
		if p.rest() == "" {
			return calls, true
		}
		if !p.opt(";") && !strings.HasPrefix(p.rest(), "{") {
			return nil, false
		}
	}
}

// decodeTextCall reads {"name": …, "arguments"|"parameters": {…}}: the
// arguments an object, or a string that holds one (as the OpenAI wire
// format has them). Anything else in the object is no call.
func decodeTextCall(raw []byte) (textCall, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimSpace(raw), &obj) != nil {
		return textCall{}, false
	}
	var name string
	if json.Unmarshal(obj["name"], &name) != nil || !validCallName(name) {
		return textCall{}, false
	}
	args, hasArgs := obj["arguments"]
	if p, ok := obj["parameters"]; ok {
		if hasArgs {
			return textCall{}, false
		}
		args, hasArgs = p, true
	}
	for k := range obj {
		if k != "name" && k != "arguments" && k != "parameters" && k != "type" && k != "id" {
			return textCall{}, false
		}
	}
	if !hasArgs || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var s string
	if json.Unmarshal(args, &s) == nil {
		args = json.RawMessage(s)
	}
	if !json.Valid(args) || !isJSONObject(args) {
		return textCall{}, false
	}
	var compact bytes.Buffer
	if json.Compact(&compact, args) != nil {
		return textCall{}, false
	}
	return textCall{Name: name, Args: compact.Bytes()}, true
}

// validCallName is a tool name as the APIs allow them.
func validCallName(name string) bool {
	return name != "" && len(name) <= maxTextCallName && toolNameChars().MatchString(name)
}

var toolNameChars = lazyRegexp(`^[A-Za-z0-9_.:-]+$`)

// inCodeFence says whether text ends inside a fenced code block: an odd
// number of fence lines (``` or ~~~) before it.
func inCodeFence(text string) bool {
	open := ""
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimLeft(line, " ")
		for _, f := range []string{"```", "~~~"} {
			if strings.HasPrefix(l, f) && (open == "" || open == f) {
				if open == "" {
					open = f
				} else if strings.TrimSpace(strings.TrimLeft(l, f[:1])) == "" {
					open = ""
				}
			}
		}
	}
	return open != ""
}

// textCallID is a fresh id for a call read from text; the tool result
// answers it.
func textCallID() string {
	var b [8]byte
	rand.Read(b[:])
	return "call_text_" + hex.EncodeToString(b[:])
}

// textToolsPrompt describes the tools for a model that gets none natively
// and asks for the hermes envelope, which scanTextCalls reads back.
func textToolsPrompt(tools []ToolSpec) string {
	if len(tools) == 0 {
		return ""
	}
	sorted := append([]ToolSpec(nil), tools...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var b strings.Builder
	b.WriteString("# Tools\n\nYou can call the tools below. To call one, end your message with this block, one per call, and write nothing after it:\n\n<tool_call>\n{\"name\": \"TOOL NAME\", \"arguments\": {ARGUMENTS AS JSON}}\n</tool_call>\n\nEach result comes back in a <tool_response> block. The tools, with the JSON schema of their arguments:\n")
	for _, t := range sorted {
		fmt.Fprintf(&b, "\n## %s\n%s\nArguments: %s\n", t.Name, strings.TrimSpace(t.Description), schemaOrEmpty(t.Schema))
	}
	return b.String()
}

// textCallEnvelope writes a call back the way textToolsPrompt asked for
// it, for the history sent to a model without native tools.
func textCallEnvelope(name string, args json.RawMessage) string {
	if !json.Valid(args) || !isJSONObject(args) {
		args = json.RawMessage("{}")
	}
	b, _ := json.Marshal(struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{name, args})
	return "<tool_call>\n" + string(b) + "\n</tool_call>"
}

// textToolResponse is a tool result as a model without native tools reads
// it.
func textToolResponse(body string, isError bool) string {
	if isError && !strings.HasPrefix(body, "Error") {
		body = "Error: " + body
	}
	return "<tool_response>\n" + body + "\n</tool_response>"
}
