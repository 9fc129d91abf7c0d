package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Every message an ACP test's client read from zot is checked against the
// protocol's JSON Schema, as @agentclientprotocol/sdk ships it
// (schema/v1/schema.json; testdata/acp/install-clients.sh installs it):
// a response against the response type of the method asked, an update or
// a request of zot's against its own. The check is stricter than the
// schema in one way: an object the schema describes holds only the
// fields it names (or _meta), so a misspelt field fails instead of
// passing for an extension.

// acpSchema is the schema's definitions and, by method, the type of the
// agent's answer and of what the agent sends the client.
type acpSchema struct {
	defs     map[string]any
	response map[string]string // method → the agent's response type
	outgoing map[string]string // method → the agent's request or notification type
}

var (
	acpSchemaOnce sync.Once
	acpSchemaV1   *acpSchema
	acpSchemaErr  error
)

// loadACPSchema reads the installed SDK's v1 schema, once.
func loadACPSchema() (*acpSchema, error) {
	acpSchemaOnce.Do(func() {
		path := filepath.Join(acpClientsDir(), "node_modules", "@agentclientprotocol", "sdk", "schema", "v1", "schema.json")
		b, err := os.ReadFile(path)
		if err != nil {
			acpSchemaErr = err
			return
		}
		var doc struct {
			Defs map[string]any `json:"$defs"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			acpSchemaErr = fmt.Errorf("%s: %w", path, err)
			return
		}
		s := &acpSchema{defs: doc.Defs, response: map[string]string{}, outgoing: map[string]string{}}
		for name, d := range doc.Defs {
			def, _ := d.(map[string]any)
			method, _ := def["x-method"].(string)
			switch side, _ := def["x-side"].(string); {
			case method == "":
			case side == "agent" && strings.HasSuffix(name, "Response"):
				s.response[method] = name
			case side == "client" && (strings.HasSuffix(name, "Request") || strings.HasSuffix(name, "Notification")):
				s.outgoing[method] = name
			}
		}
		acpSchemaV1 = s
	})
	return acpSchemaV1, acpSchemaErr
}

// checkSchema checks every message zot wrote to p against the schema.
func (p *acpProc) checkSchema() {
	t := p.t
	t.Helper()
	schema, err := loadACPSchema()
	if err != nil {
		msg := "the ACP schema is not installed, so zot's messages were not checked against it (sh testdata/acp/install-clients.sh): " + err.Error()
		if os.Getenv("ZOT_ACP_REQUIRE_CLIENTS") != "" {
			t.Error(msg)
		} else {
			t.Log(msg)
		}
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.lines {
		if l.Method == "BAD LINE" {
			continue // waitFor reports it
		}
		if err := schema.checkMessage(l, p.sent[string(l.ID)]); err != nil {
			t.Errorf("zot wrote a message the ACP schema does not allow: %v\n%s", err, l.Raw)
		}
	}
}

// checkMessage checks one message; asked is the method of the request a
// response answers, "" when the test sent it unrecorded.
func (s *acpSchema) checkMessage(l acpLine, asked string) error {
	var msg map[string]any
	if err := json.Unmarshal([]byte(l.Raw), &msg); err != nil {
		return err
	}
	if msg["jsonrpc"] != "2.0" {
		return fmt.Errorf(`"jsonrpc" is %v, not "2.0"`, msg["jsonrpc"])
	}
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/$defs/" + name} }
	envelope := map[string]any{"type": "object", "properties": map[string]any{"jsonrpc": map[string]any{}}}
	fields := envelope["properties"].(map[string]any)
	switch {
	case l.Method != "":
		name := s.outgoing[l.Method]
		if name == "" {
			return fmt.Errorf("%q is no method an agent sends", l.Method)
		}
		fields["method"], fields["params"] = map[string]any{}, ref(name)
		if len(l.ID) > 0 {
			fields["id"] = ref("RequestId")
		}
		envelope["required"] = []any{"method", "params"}
	case l.Error != nil:
		fields["id"], fields["error"] = ref("RequestId"), ref("Error")
		envelope["required"] = []any{"id", "error"}
	default:
		fields["id"], fields["result"] = ref("RequestId"), ref("AgentResponse")
		if name := s.response[asked]; name != "" {
			fields["result"] = ref(name)
		}
		envelope["required"] = []any{"id", "result"}
	}
	return s.check(msg, envelope, "message")
}

// schemaError is a value the schema does not allow, and where it is;
// otherVariant when it is a constant, which names another variant of a
// union than the value's.
type schemaError struct {
	at, why      string
	otherVariant bool
}

func (e *schemaError) Error() string { return e.at + ": " + e.why }

// check checks v against schema, and that an object the schema describes
// has no field it does not name.
func (s *acpSchema) check(v, schema any, at string) error {
	named, err := s.eval(v, schema, at)
	if err != nil {
		return err
	}
	if o, ok := v.(map[string]any); ok && named != nil && !named.open {
		keys := make([]string, 0, len(o))
		for k := range o {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !named.fields[k] {
				return &schemaError{at: at + "." + k, why: "a field the schema does not name"}
			}
		}
	}
	return nil
}

// schemaFields are the fields the parts of a schema that v matched name;
// open when one of them lets any other field in.
type schemaFields struct {
	fields map[string]bool
	open   bool
}

func (f *schemaFields) add(g *schemaFields) *schemaFields {
	if g == nil {
		return f
	}
	if f == nil {
		f = &schemaFields{fields: map[string]bool{}}
	}
	for k := range g.fields {
		f.fields[k] = true
	}
	f.open = f.open || g.open
	return f
}

// eval applies one schema's keywords to v, with the schemas it composes,
// and says which fields they name (nil: none describes an object).
func (s *acpSchema) eval(v, schema any, at string) (*schemaFields, error) {
	sch, ok := schema.(map[string]any)
	if !ok {
		return nil, nil // true: anything
	}
	fail := func(format string, args ...any) (*schemaFields, error) {
		return nil, &schemaError{at: at, why: fmt.Sprintf(format, args...)}
	}
	var named *schemaFields
	if ref, ok := sch["$ref"].(string); ok {
		def, ok := s.defs[strings.TrimPrefix(ref, "#/$defs/")]
		if !ok {
			return fail("the schema has no %s", ref)
		}
		f, err := s.eval(v, def, at)
		if err != nil {
			return nil, err
		}
		named = named.add(f)
	}
	if typ, ok := sch["type"]; ok && !schemaTypeIs(v, typ) {
		return fail("%s is not %v", schemaValue(v), typ)
	}
	if c, ok := sch["const"]; ok && !reflect.DeepEqual(v, c) {
		return nil, &schemaError{at, fmt.Sprintf("%s is not %s", schemaValue(v), schemaValue(c)), true}
	}
	if e, ok := sch["enum"].([]any); ok && !containsValue(e, v) {
		return fail("%s is none of %s", schemaValue(v), schemaValue(e))
	}
	if n, ok := v.(float64); ok {
		if min, ok := sch["minimum"].(float64); ok && n < min {
			return fail("%v is below %v", n, min)
		}
		if max, ok := sch["maximum"].(float64); ok && n > max {
			return fail("%v is above %v", n, max)
		}
		if f, _ := sch["format"].(string); strings.HasPrefix(f, "uint") && n < 0 {
			return fail("%v is negative, but a %s", n, f)
		}
	}
	if str, ok := v.(string); ok {
		if min, ok := sch["minLength"].(float64); ok && float64(len([]rune(str))) < min {
			return fail("%q is shorter than %v", str, min)
		}
	}
	if o, ok := v.(map[string]any); ok {
		for _, r := range asList(sch["required"]) {
			if _, ok := o[r.(string)]; !ok {
				return fail("no %q, which is required", r)
			}
		}
		props, hasProps := sch["properties"].(map[string]any)
		if hasProps {
			named = named.add(&schemaFields{fields: map[string]bool{}})
			for k, ps := range props {
				named.fields[k] = true
				if val, ok := o[k]; ok {
					if err := s.check(val, ps, at+"."+k); err != nil {
						return nil, err
					}
				}
			}
		}
		switch more := sch["additionalProperties"].(type) {
		case bool:
			if more {
				named = named.add(&schemaFields{open: true})
			}
		case map[string]any:
			for k, val := range o {
				if _, declared := props[k]; !declared {
					if err := s.check(val, more, at+"."+k); err != nil {
						return nil, err
					}
				}
			}
			named = named.add(&schemaFields{open: true})
		}
		if more, _ := sch["unevaluatedProperties"].(bool); more {
			named = named.add(&schemaFields{open: true})
		}
	}
	if a, ok := v.([]any); ok {
		if items, ok := sch["items"]; ok {
			for i, item := range a {
				if err := s.check(item, items, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, part := range asList(sch["allOf"]) {
		f, err := s.eval(v, part, at)
		if err != nil {
			return nil, err
		}
		named = named.add(f)
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		parts := asList(sch[kw])
		if len(parts) == 0 {
			continue
		}
		matched := 0
		var best error
		for _, part := range parts {
			f, err := s.eval(v, part, at)
			if err != nil {
				best = deeperError(best, err)
				continue
			}
			matched++
			named = named.add(f)
		}
		switch {
		case matched == 0:
			return nil, best
		case kw == "oneOf" && matched > 1:
			return fail("%s matches %d of the schema's oneOf, not one", schemaValue(v), matched)
		}
	}
	if not, ok := sch["not"]; ok {
		if _, err := s.eval(v, not, at); err == nil {
			return fail("%s matches what the schema rules out", schemaValue(v))
		}
	}
	return named, nil
}

// deeperError is of two failed alternatives the one of the variant the
// value meant to be: not a constant of another, and further into it.
func deeperError(a, b error) error {
	ea, _ := a.(*schemaError)
	eb, _ := b.(*schemaError)
	switch {
	case ea == nil:
		return b
	case eb == nil:
		return a
	case ea.otherVariant != eb.otherVariant:
		if ea.otherVariant {
			return b
		}
		return a
	case len(eb.at) > len(ea.at):
		return b
	}
	return a
}

func schemaTypeIs(v, typ any) bool {
	types := asList(typ)
	if types == nil {
		types = []any{typ}
	}
	for _, t := range types {
		ok := false
		switch t {
		case "object":
			_, ok = v.(map[string]any)
		case "array":
			_, ok = v.([]any)
		case "string":
			_, ok = v.(string)
		case "boolean":
			_, ok = v.(bool)
		case "null":
			ok = v == nil
		case "number":
			_, ok = v.(float64)
		case "integer":
			n, isNum := v.(float64)
			ok = isNum && n == math.Trunc(n)
		}
		if ok {
			return true
		}
	}
	return false
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func containsValue(list []any, v any) bool {
	for _, e := range list {
		if reflect.DeepEqual(e, v) {
			return true
		}
	}
	return false
}

func schemaValue(v any) string {
	b, _ := json.Marshal(v)
	return truncate(string(b), 120)
}

// The check itself: what the schema allows passes, and a misspelt or
// unnamed field, a value of the wrong kind and a missing field fail.
func TestACPSchemaCheckCatchesWhatTheSchemaRulesOut(t *testing.T) {
	t.Parallel()
	schema, err := loadACPSchema()
	if err != nil {
		msg := "SKIPPING: the ACP schema is not installed (sh testdata/acp/install-clients.sh): " + err.Error()
		if os.Getenv("ZOT_ACP_REQUIRE_CLIENTS") != "" {
			t.Fatal(msg)
		}
		skipMissing(t, "%s", msg)
	}
	update := func(u string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":` + u + `}}`
	}
	for _, c := range []struct {
		raw, asked string
		ok         bool
	}{
		{update(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`), "", true},
		{update(`{"sessionUpdate":"agent_message_chunk","contents":{"type":"text","text":"hi"}}`), "", false},
		{update(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi","lang":"en"}}`), "", false},
		{update(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"},"_meta":{"any":1}}`), "", true},
		{update(`{"sessionUpdate":"usage_update","used":-1,"size":10}`), "", false},
		{update(`{"sessionUpdate":"thought_chunk","content":{"type":"text","text":"hm"}}`), "", false},
		{`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`, "session/prompt", true},
		{`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"length"}}`, "session/prompt", false},
		{`{"jsonrpc":"2.0","id":3,"result":{"sessions":[{"sessionId":"a","updatedAt":"2026-01-01T00:00:00Z"}]}}`, "session/list", false},
		{`{"jsonrpc":"2.0","id":3,"result":{"sessions":[{"sessionId":"a","cwd":"/w","title":"t"}]}}`, "session/list", true},
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, "session/close", true},
		{`{"jsonrpc":"2.0","id":3,"error":{"code":-32002,"message":"not found"}}`, "session/close", true},
		{`{"jsonrpc":"2.0","id":3,"error":{"code":-32002,"msg":"not found"}}`, "session/close", false},
	} {
		var l acpLine
		if err := json.Unmarshal([]byte(c.raw), &l); err != nil {
			t.Fatal(err)
		}
		l.Raw = c.raw
		if err := schema.checkMessage(l, c.asked); (err == nil) != c.ok {
			t.Errorf("%s (an answer to %q): passed %v, want %v (%v)", c.raw, c.asked, err == nil, c.ok, err)
		}
	}
}
