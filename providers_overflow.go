package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// When the conversation does not fit: the servers' words for a prompt
// longer than their context (which the agent answers by compacting and
// retrying once), zot's own count of the tokens it sends (for servers that
// report none, and to catch one that cuts the prompt without a word), and
// what a user can do about it on each server.

// overflowWordings are the refusals of a prompt longer than the context,
// each server's exact words (docs/models.md has the table with sources).
// Matched case-insensitively against the error's message and type.
var overflowWordings = []struct{ server, words string }{
	{"Anthropic", "prompt is too long"},
	{"OpenAI", "context_length_exceeded"},
	{"OpenAI, vLLM", "maximum context length"},
	{"vLLM", "is longer than the maximum model length"},
	{"llama.cpp", "exceed_context_size_error"},
	{"llama.cpp", "exceeds the available context size"},
	{"llama.cpp (older), LM Studio", "tokens to keep from the initial prompt is greater than the context length"},
	{"LM Studio", "when context the overflows"},
	{"LM Studio", "does not currently support mid-generation context overflow"},
	{"LM Studio (MLX)", "context size has been exceeded"},
	{"ollama (older)", "prompt too long; exceeded max context length"},
	{"ollama", "the prompt is longer than the context length"},
	{"ollama", "the input length exceeds the context length"},
	{"TGI", "`inputs` tokens + `max_new_tokens` must be <="},
	{"TGI", "`inputs` must have less than"},
	{"generic", "context window"},
}

// isOverflow says whether an error's words are a context overflow.
func isOverflow(message, typ string) bool {
	m := strings.ToLower(message + " " + typ)
	for _, w := range overflowWordings {
		if strings.Contains(m, strings.ToLower(w.words)) {
			return true
		}
	}
	return false
}

// overflowContext finds the context size an overflow message names, if
// any: llama.cpp's "available context size (512 tokens)", LM Studio's
// "context length of only 4096 tokens" and "n_ctx: 4096", vLLM's "maximum
// context length is 4096 tokens", TGI's "must be <= 4096".
func overflowContext(message string) int {
	for _, re := range overflowContextRes() {
		if m := re.FindStringSubmatch(message); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

var overflowContextRes = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`available context size \((\d+) tokens\)`),
		regexp.MustCompile(`context length of only (\d+) tokens`),
		regexp.MustCompile(`n_ctx: ?(\d+)`),
		regexp.MustCompile(`maximum context length is (\d+)`),
		regexp.MustCompile(`maximum model length of (\d+)`),
		regexp.MustCompile(`must be <= (\d+)`),
		regexp.MustCompile(`must have less than (\d+) tokens`),
	}
})

// raiseContextHint says how to give a kind of server a larger context.
func raiseContextHint(kind string) string {
	switch kind {
	case "llama.cpp":
		return "start llama-server with a larger --ctx-size (-c), or set contextWindow lower in models.json so zot compacts sooner"
	case "ollama":
		return `set "contextWindow" for the model in $ZOT_HOME/models.json (zot sends it as num_ctx, up to the model's own length), or PARAMETER num_ctx in its Modelfile`
	case "vllm":
		return "start vLLM with a larger --max-model-len"
	case "lmstudio":
		return "load the model in LM Studio with a larger context length"
	}
	return "give the server a larger context, or set contextWindow for the model in $ZOT_HOME/models.json so zot compacts sooner"
}

// Token estimates. zot counts what it sends as one token per
// bytesPerToken bytes of text — the system prompt, the messages' text,
// tool calls' names and arguments, tool results, the tools' names,
// descriptions and schemas — plus perMessageTokens for each message's
// framing and imageTokens for each image. English prose and code run at 3
// to 4.5 bytes a token in the tokenizers of current models, so the count
// is near the truth or under it; it is only used where the server says
// nothing (no usage), and to tell a prompt the server cut (it read less
// than half) from one it read.
const (
	bytesPerToken    = 4
	perMessageTokens = 4
	imageTokens      = 768
)

// EstimateTokens is zot's count of the tokens req sends (see above).
// withTools false leaves the tools out: a server may drop them without a
// word, and that is not a cut prompt.
func EstimateTokens(req Request, withTools bool) int {
	n := len(req.System)
	images := 0
	for _, m := range req.Messages {
		t := m.tallied()
		n += perMessageTokens*bytesPerToken + t.bytes
		images += t.images
	}
	tokens := (n+bytesPerToken-1)/bytesPerToken + images*imageTokens
	if withTools {
		tokens += toolTokens(req.Tools)
	}
	return tokens
}

// toolTokens is zot's count of the tokens the definitions of tools take,
// as EstimateTokens counts them.
func toolTokens(tools []ToolSpec) int {
	n := 0
	for _, t := range tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	return (n + bytesPerToken - 1) / bytesPerToken
}

// toolSearchName is the tool through which the agent lets the model load
// the definitions of tools it sent only by name (agent_toolsearch.go).
const toolSearchName = "tool_search"

// tallied is m's tally, made once for a message of the agent's transcript
// rather than at every request.
func (m Message) tallied() messageTally {
	if m.wire != nil {
		if t := m.wire.tally.Load(); t != nil && sameBlocks(t.content, m.Content) {
			return *t
		}
	}
	t := messageTally{content: m.Content}
	t.blank = !slices.ContainsFunc(m.Content, func(b Block) bool {
		return b.Type != BlockText || strings.TrimSpace(b.Text) != ""
	})
	for _, b := range m.Content {
		t.bytes += blockBytes(b, &t.images)
	}
	if m.wire != nil {
		m.wire.tally.Store(&t)
	}
	return t
}

func blockBytes(b Block, images *int) int {
	switch b.Type {
	case BlockImage:
		*images++
		return 0
	case BlockToolCall:
		// Arguments that are not a whole JSON object (a call the output
		// limit cut) go to every server as {}: count what goes.
		if !json.Valid(b.Args) || !isJSONObject(b.Args) {
			return len(b.Name) + 2
		}
		return len(b.Name) + len(b.Args)
	case BlockToolResult:
		n := 0
		for _, c := range b.Content {
			n += blockBytes(c, images)
		}
		return n
	}
	return len(b.Text)
}

// EstimateOutputTokens counts a reply as EstimateTokens counts a request,
// a cut call's arguments as the model wrote them.
func EstimateOutputTokens(content []Block) int {
	n, images := 0, 0
	for _, b := range content {
		if b.Type == BlockToolCall {
			n += len(b.Name) + len(b.Args)
			continue
		}
		n += blockBytes(b, &images)
	}
	return (n + bytesPerToken - 1) / bytesPerToken
}

// Truncation: a server that read markedly fewer prompt tokens than zot
// sent cut the prompt (ollama does so silently, keeping its start and
// end). Less than half of zot's estimate, and by more than truncationSlack
// tokens (a short prompt's template framing can account for that many),
// counts as cut.
const truncationSlack = 256

func looksTruncated(reported, estimate int) bool {
	return reported > 0 && reported*2 < estimate && estimate-reported > truncationSlack
}

// trainedLengthHint is the way out when the server already gives the
// model all it was trained for: no setting can raise it.
const trainedLengthHint = "that is all the model takes (the length it was trained for): shorten what you send, or use a model with a longer context"

func atTrainedLength(info ServerInfo) bool {
	return info.TrainWindow > 0 && info.Window >= info.TrainWindow
}

// truncationMessage is what the user is told when the server cut the
// prompt.
func truncationMessage(server, model string, reported, estimate int, info ServerInfo) string {
	window, raise := "", "to give the model more room, "+raiseContextHint(info.Kind)
	if info.Window > 0 {
		window = fmt.Sprintf(" Its context for %s is %d tokens.", model, info.Window)
	}
	if atTrainedLength(info) {
		raise = trainedLengthHint
	}
	return fmt.Sprintf("%s read only %d of the about %d prompt tokens zot sent: it cut the conversation without an error, so the model did not see all of it.%s zot compacts the conversation before the next request; %s.",
		server, reported, estimate, window, raise)
}

// refusesTools says whether an error is a server refusing the tools it
// was sent (ollama: "does not support tools"; llama-server and vLLM
// started without tool support).
func refusesTools(err error) bool {
	var perr *ProviderError
	if !errors.As(err, &perr) || perr.Status < 400 || perr.Status > 500 {
		return false
	}
	m := strings.ToLower(perr.Message)
	return strings.Contains(m, "does not support tools") || strings.Contains(m, "tools param requires --jinja") ||
		strings.Contains(m, `"auto" tool choice requires`) || strings.Contains(m, "tool use is not supported") ||
		strings.Contains(m, "does not support function calling")
}

// cannotLoad says whether an error is a server that cannot load the model
// asked for — llama-server's router: "model name=… failed to load" —
// which no retry changes.
func cannotLoad(err error) bool {
	var perr *ProviderError
	return errors.As(err, &perr) && strings.Contains(perr.Message, "failed to load")
}
