package main

import (
	"encoding/json"
	"slices"
)

// What an Anthropic Messages request asks beside the conversation: how the
// model thinks (thinking, output_config.effort) and where the prompt cache
// may keep the request's prefix (cache_control breakpoints).

type anthThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens,omitempty"`
	// Display "summarized" asks for the thinking text: Opus 4.7 and later
	// send only the signature unless asked, and the user would watch a
	// model think without seeing any of it.
	Display string `json:"display,omitempty"`
}

type anthOutputConfig struct {
	Effort string `json:"effort,omitempty"`
}

// thinkingBudget is the budget_tokens of each --reasoning level for the
// models that take a budget (ThinkingBudget); for adaptive thinking, the
// room a model of unknown limits is given.
var thinkingBudget = map[string]int{"low": 4096, "medium": 16384, "high": 32768, "xhigh": 49152, "max": 63999}

// Thinking shares max_tokens with the answer: answerRoom is what is left
// for the answer at least, and the API takes no budget below
// minThinkingBudget.
const (
	answerRoom        = 8192
	minThinkingBudget = 1024
)

// askThinking sets how r asks the model to think at the --reasoning level:
// adaptive thinking with the level as output_config.effort, or a token
// budget, as the catalogue says the model takes it (thinkingStyle). A
// model that cannot reason, and level off, are sent neither. defaultMax
// says that max_tokens is the model's limit rather than the caller's, and
// may be raised for a model whose limit zot does not know.
func askThinking(r *anthRequest, info ModelInfo, level string, defaultMax bool) {
	level = reasoningFor(info, level)
	if level == "" {
		return
	}
	switch thinkingStyle("anthropic", info) {
	case ThinkingAdaptive:
		r.Thinking = &anthThinking{Type: "adaptive", Display: "summarized"}
		r.OutputConfig = &anthOutputConfig{Effort: level}
		if room := thinkingBudget[level] + answerRoom; !info.Known && defaultMax && r.MaxTokens < room {
			r.MaxTokens = room
		}
	case ThinkingBudget:
		budget, ok := thinkingBudget[level]
		if !ok {
			return
		}
		switch {
		case r.MaxTokens >= budget+answerRoom:
		case !info.Known:
			r.MaxTokens = budget + answerRoom
		default:
			// The model's output limit is firm: the budget gives way.
			budget = max(minThinkingBudget, r.MaxTokens-answerRoom)
		}
		if budget < r.MaxTokens {
			r.Thinking = &anthThinking{Type: "enabled", BudgetTokens: budget}
		}
	}
}

type cacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// CacheRetention1h asks Anthropic to keep prompt cache entries for an
// hour instead of five minutes: writes cost 2× the input price instead of
// 1.25×, and a session with long pauses reads its prefix instead of
// writing it again.
const CacheRetention1h = "1h"

func (p *anthropicProvider) cacheMark() *cacheControl {
	return &cacheControl{Type: "ephemeral", TTL: p.cacheTTL}
}

// cacheBytesPerToken estimates tokens from bytes on the generous side
// (JSON and code run at about 3 bytes a token), so that a prefix that may
// reach the cache minimum gets its breakpoint.
const cacheBytesPerToken = 3

// placeCacheBreakpoints marks where the prompt cache may keep r's prefix,
// within Anthropic's four breakpoints: the tools and the system prompt,
// when they are long enough to be cached on their own (minTokens: below
// the model's minimum a breakpoint caches nothing). The other two go on
// the messages (anthTurns).
func placeCacheBreakpoints(r *anthRequest, minTokens int, mark *cacheControl) {
	if prefixTokens(r) >= minTokens {
		if n := len(r.Tools); n > 0 {
			r.Tools[n-1].CacheControl = mark
		}
		if n := len(r.System); n > 0 {
			r.System[n-1].CacheControl = mark
		}
	}
}

// requestBody is r's JSON with msgs as its messages, each message encoded
// once for the whole session (Message.wireEncoded) and joined.
func (p *anthropicProvider) requestBody(r anthRequest, msgs []Message) ([]byte, error) {
	frame, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	turns, err := anthTurns(msgs, p.cacheMark())
	if err != nil {
		return nil, err
	}
	return turns.splice(frame, "messages")
}

// anthTurns is the transcript as the items of the messages array, merging
// consecutive messages of one role (the API wants them alternating), with
// a cache breakpoint at the end of each of the last two user messages: the
// last, which the next request reads; and the one before, which this
// request reads back exactly — from the last one Anthropic looks for an
// earlier entry only 20 blocks back, and a turn of many parallel tool calls
// adds more blocks than that, so without it the whole prefix would be
// written again at 1.25× instead of read at 0.1×. The two marked messages
// are encoded afresh.
func anthTurns(msgs []Message, mark *cacheControl) (jsonList, error) {
	// First where each turn ends and what its last block is; then the
	// pieces, with no copy of an encoding kept.
	type turn struct {
		role  Role
		first int // the turn's first message with blocks
		last  int // the message its last block comes from
		tail  string
		mark  []byte // the last message encoded again with a breakpoint
	}
	var turns []turn
	encoded := make([][]byte, len(msgs))
	for i, m := range msgs {
		e := m.wireEncoded("anthropic", anthWire)
		if e.err != nil {
			return jsonList{}, e.err
		}
		encoded[i] = e.data
		if len(e.data) == 0 {
			continue
		}
		if n := len(turns); n > 0 && turns[n-1].role == m.Role {
			turns[n-1].last, turns[n-1].tail = i, e.tail
			continue
		}
		turns = append(turns, turn{role: m.Role, first: i, last: i, tail: e.tail})
	}
	marked := 0
	for i := len(turns) - 1; i >= 0 && marked < 2; i-- {
		t := &turns[i]
		if t.role != RoleUser || !slices.Contains([]string{"text", "image", "tool_result"}, t.tail) {
			continue
		}
		blocks := anthBlocks(msgs[t.last])
		blocks[len(blocks)-1].CacheControl = mark
		data, err := jsonItems(blocks)
		if err != nil {
			return jsonList{}, err
		}
		t.mark = data
		marked++
	}
	list := newJSONList(2*len(msgs) + 2*len(turns))
	for _, t := range turns {
		head, ok := anthTurnHeads[t.role]
		if !ok {
			head = []byte(`{"role":` + string(jsonString(string(t.role))) + `,"content":[`)
		}
		list.open(head)
		for i := t.first; i <= t.last; i++ {
			data := encoded[i]
			if i == t.last && t.mark != nil {
				data = t.mark
			}
			list.inner(data)
		}
		list.close(anthTurnTail)
	}
	return list, nil
}

// anthTurnHeads and anthTurnTail frame a turn's blocks.
var (
	anthTurnHeads = map[Role][]byte{
		RoleUser:      []byte(`{"role":"user","content":[`),
		RoleAssistant: []byte(`{"role":"assistant","content":[`),
	}
	anthTurnTail = []byte("]}")
)

// prefixTokens estimates the tokens of r's tools and system prompt.
func prefixTokens(r *anthRequest) int {
	n := 0
	for _, t := range r.Tools {
		b, _ := json.Marshal(t)
		n += len(b)
	}
	for _, s := range r.System {
		b, _ := json.Marshal(s)
		n += len(b)
	}
	return n / cacheBytesPerToken
}
