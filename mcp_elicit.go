package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
)

// A server's questions to the user (elicitation). Up to 2025-11-25 they
// come as elicitation/create requests in the middle of a call (answered on
// the connection's goroutine for them), or as a URL elicitation required
// error that the call is sent again after; in 2026-07-28 as the
// inputRequests of an input_required result. Each becomes an Elicitation
// for the mode's Elicitor (MCPConfig.Elicit); a question in a mode it does
// not offer is refused, a form zot cannot show is refused, and an answer
// is checked against the form before it goes back. The log names the
// question and the answer's action, never what the user typed.

const (
	mcpMaxFields     = 32      // fields of one form
	mcpMaxQuestion   = 4 << 10 // bytes of a question's message
	mcpMaxFieldText  = 1 << 10 // bytes of a field's title or description
	mcpMaxOptions    = 100     // choices of one field
	mcpMaxElicitURL  = 4 << 10 // bytes of a URL to open
	mcpMaxURLRequest = 4       // URL elicitations of one -32042 error
)

// mcpElicitParams are elicitation/create's params, and a URL elicitation
// of a -32042 error.
type mcpElicitParams struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	URL             string          `json:"url"`
	ElicitationID   string          `json:"elicitationId"`
}

// answerElicitation answers a 2025-11-25 elicitation/create request.
func (s *mcpServer) answerElicitation(ctx context.Context, params json.RawMessage) (any, *jsonrpcError) {
	q, err := s.question(params)
	if err != nil {
		s.log.printf("refused a question: %v", err)
		return nil, &jsonrpcError{Code: -32602, Message: "zot cannot ask this: " + err.Error()}
	}
	if !s.m.cfg.Elicit.Offers(q.Mode) {
		s.log.printf("refused a question in %s mode: %s", q.Mode, s.m.cfg.ElicitRefusal)
		return nil, &jsonrpcError{Code: -32602, Message: s.refusal(q.Mode)}
	}
	return s.ask(ctx, q), nil
}

// elicit answers one question of an input_required result. Where zot
// cannot ask it, the answer is a decline: the server learns that nobody
// will answer and may go on without.
func (s *mcpServer) elicit(ctx context.Context, params json.RawMessage) map[string]any {
	q, err := s.question(params)
	switch {
	case err != nil:
		s.log.printf("declined a question zot cannot ask: %v", err)
		return map[string]any{"action": ElicitDecline}
	case !s.m.cfg.Elicit.Offers(q.Mode):
		s.log.printf("declined a question in %s mode: %s", q.Mode, s.refusal(q.Mode))
		return map[string]any{"action": ElicitDecline}
	}
	return s.ask(ctx, q)
}

func (s *mcpServer) refusal(m ElicitMode) string {
	if s.m.cfg.ElicitRefusal != "" {
		return s.m.cfg.ElicitRefusal
	}
	return fmt.Sprintf("zot cannot answer questions in %s mode here", m)
}

// ask puts q to the mode's Elicitor and makes the ElicitResult of the
// answer; accepted content the form does not allow becomes a cancel.
func (s *mcpServer) ask(ctx context.Context, q Elicitation) map[string]any {
	s.log.printf("asked the user (%s mode): %s", q.Mode, truncate(q.Message, 200))
	a := s.m.cfg.Elicit.Ask(ctx, q)
	res := map[string]any{"action": a.Action}
	switch a.Action {
	case ElicitAccept:
		if q.Mode == ElicitForm {
			content, err := q.Complete(a.Content)
			if err != nil {
				s.log.printf("the answer does not fit the form (%v): cancelled", err)
				return map[string]any{"action": ElicitCancel}
			}
			res["content"] = content
		}
	case ElicitDecline:
	default:
		res["action"] = ElicitCancel
	}
	s.log.printf("the user answered: %s %s", res["action"], a.Why)
	return res
}

// openURLs puts the URL elicitations of a -32042 error to the user; nil
// when they accepted every one, so the call is sent again.
func (s *mcpServer) openURLs(ctx context.Context, rerr *jsonrpcError) error {
	var d struct {
		Elicitations []json.RawMessage `json:"elicitations"`
	}
	if json.Unmarshal(rerr.Data, &d) != nil || len(d.Elicitations) == 0 {
		return rerr
	}
	if len(d.Elicitations) > mcpMaxURLRequest {
		return fmt.Errorf("the server needs %d URLs opened; zot opens at most %d for one call", len(d.Elicitations), mcpMaxURLRequest)
	}
	for _, raw := range d.Elicitations {
		q, err := s.question(raw)
		if err == nil && q.Mode != ElicitURL {
			err = errors.New("not a URL elicitation")
		}
		if err != nil {
			return fmt.Errorf("the server needs a URL opened, but its request is bad (%v): %w", err, rerr)
		}
		if !s.m.cfg.Elicit.Offers(ElicitURL) {
			return fmt.Errorf("the server needs %s opened first (%s); %s", q.URL, truncate(q.Message, 200), s.refusal(ElicitURL))
		}
		if a := s.ask(ctx, q); a["action"] != ElicitAccept {
			return fmt.Errorf("the server needs %s opened first (%s); the user answered %s", q.URL, truncate(q.Message, 200), a["action"])
		}
	}
	return nil
}

// question reads elicitation/create's params: a form whose fields zot can
// show, or an http(s) URL.
func (s *mcpServer) question(raw json.RawMessage) (Elicitation, error) {
	var p mcpElicitParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return Elicitation{}, fmt.Errorf("bad params: %v", err)
	}
	q := Elicitation{Server: s.cfg.Name, Message: utf8Prefix(p.Message, mcpMaxQuestion)}
	switch p.Mode {
	case "", "form":
		q.Mode = ElicitForm
		fields, err := elicitFields(p.RequestedSchema)
		if err != nil {
			return q, err
		}
		q.Fields = fields
	case "url":
		q.Mode = ElicitURL
		u, err := url.Parse(p.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(p.URL) > mcpMaxElicitURL {
			return q, fmt.Errorf("the URL to open is not an http(s) URL of at most %d bytes", mcpMaxElicitURL)
		}
		q.URL = p.URL
	default:
		return q, fmt.Errorf("unknown mode %q", truncate(p.Mode, 20))
	}
	return q, nil
}

// mcpFieldSchema is one property of a requested schema.
type mcpFieldSchema struct {
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Default     json.RawMessage `json:"default"`
	Enum        []string        `json:"enum"`
	EnumNames   []string        `json:"enumNames"`
	OneOf       []mcpConstTitle `json:"oneOf"`
	Format      string          `json:"format"`
	MinLength   *int            `json:"minLength"`
	MaxLength   *int            `json:"maxLength"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	MinItems    *int            `json:"minItems"`
	MaxItems    *int            `json:"maxItems"`
	Items       *struct {
		Type  string          `json:"type"`
		Enum  []string        `json:"enum"`
		AnyOf []mcpConstTitle `json:"anyOf"`
	} `json:"items"`
}

type mcpConstTitle struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

// elicitFields reads a requested schema: a flat object of primitive
// properties, in the order the server wrote them. A default the field
// does not accept is dropped.
func elicitFields(raw json.RawMessage) ([]ElicitField, error) {
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if len(raw) == 0 {
		return nil, errors.New("a form without requestedSchema")
	}
	if err := json.Unmarshal(raw, &schema); err != nil || schema.Type != "object" {
		return nil, errors.New("requestedSchema is not an object schema")
	}
	if len(schema.Properties) > mcpMaxFields {
		return nil, fmt.Errorf("a form of %d fields; zot shows at most %d", len(schema.Properties), mcpMaxFields)
	}
	var fields []ElicitField
	for _, name := range objectKeys(raw, "properties") {
		var p mcpFieldSchema
		if err := json.Unmarshal(schema.Properties[name], &p); err != nil {
			return nil, fmt.Errorf("field %q: %v", truncate(name, 40), err)
		}
		f := ElicitField{Name: name, Title: utf8Prefix(p.Title, mcpMaxFieldText), Description: utf8Prefix(p.Description, mcpMaxFieldText),
			Type: p.Type, Format: p.Format, MinLength: p.MinLength, MaxLength: p.MaxLength, Minimum: p.Minimum, Maximum: p.Maximum}
		for _, r := range schema.Required {
			f.Required = f.Required || r == name
		}
		// Both would have to hold, and a form offers one list of choices.
		if len(p.Enum) > 0 && len(p.OneOf) > 0 || p.Items != nil && len(p.Items.Enum) > 0 && len(p.Items.AnyOf) > 0 {
			return nil, fmt.Errorf("field %q: choices given twice (enum and oneOf or anyOf)", truncate(name, 40))
		}
		switch p.Type {
		case "string":
			for i, v := range p.Enum {
				o := ElicitOption{Value: v}
				if i < len(p.EnumNames) {
					o.Title = p.EnumNames[i]
				}
				f.Options = append(f.Options, o)
			}
			for _, c := range p.OneOf {
				f.Options = append(f.Options, ElicitOption{Value: c.Const, Title: c.Title})
			}
		case "number", "integer", "boolean":
		case "array":
			if p.Items == nil {
				return nil, fmt.Errorf("field %q: a list without items", truncate(name, 40))
			}
			// Choices are strings; a titled list (anyOf) may leave the type out.
			if p.Items.Type != "" && p.Items.Type != "string" {
				return nil, fmt.Errorf("field %q: a list of %q, not of strings", truncate(name, 40), truncate(p.Items.Type, 20))
			}
			f.Type, f.Multiple, f.MinItems, f.MaxItems = "string", true, p.MinItems, p.MaxItems
			for _, v := range p.Items.Enum {
				f.Options = append(f.Options, ElicitOption{Value: v})
			}
			for _, c := range p.Items.AnyOf {
				f.Options = append(f.Options, ElicitOption{Value: c.Const, Title: c.Title})
			}
			if len(f.Options) == 0 {
				return nil, fmt.Errorf("field %q: a list that is not of choices", truncate(name, 40))
			}
		default:
			return nil, fmt.Errorf("field %q: type %q is not one a form can show", truncate(name, 40), truncate(p.Type, 20))
		}
		if len(f.Options) > mcpMaxOptions {
			return nil, fmt.Errorf("field %q: %d choices; zot shows at most %d", truncate(name, 40), len(f.Options), mcpMaxOptions)
		}
		if len(p.Default) > 0 {
			var v any
			if json.Unmarshal(p.Default, &v) == nil {
				if v, err := f.Check(v); err == nil {
					f.Default = v
				}
			}
		}
		fields = append(fields, f)
	}
	// A required field the form cannot show could never be answered.
	for _, r := range schema.Required {
		if _, ok := schema.Properties[r]; !ok {
			return nil, fmt.Errorf("required field %q is not among the properties", truncate(r, 40))
		}
	}
	return fields, nil
}

// objectKeys are the keys of the object at raw[field], in the order they
// were written (a map forgets it, and a form's fields come in the order
// the server wrote them).
func objectKeys(raw json.RawMessage, field string) []string {
	var outer map[string]json.RawMessage
	if json.Unmarshal(raw, &outer) != nil {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(outer[field]))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	seen := map[string]bool{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return keys
		}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}
