package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Elicitation: a question an MCP server asks the user while its tool runs.
// The MCP client (mcp_elicit.go) makes one of what the server sent; who
// answers it in a mode — the TUI's dialog, an rpc or --json client, `zot
// mcp call --elicit` — is an Elicitor the wiring hands the client, and
// Complete checks an answer the way the server's form asks, filling in the
// defaults of the fields left out. Everything in a question comes from the
// server: untrusted text, to be sanitised before it reaches a terminal.

// ElicitMode is how a question is answered: a form filled in zot, or a URL
// the user opens (the answer then never passes through zot).
type ElicitMode string

const (
	ElicitForm ElicitMode = "form"
	ElicitURL  ElicitMode = "url"
)

// Elicitation is one question.
type Elicitation struct {
	Server  string // the configured name of the server that asks
	Mode    ElicitMode
	Message string        // why it asks, in the server's words
	Fields  []ElicitField // form mode
	URL     string        // url mode: what the user is asked to open
}

// ElicitField is one field of a form: a primitive JSON Schema as MCP
// allows in a requested schema. Type is string, number, integer or
// boolean; a string with Options is one choice among them, or with
// Multiple several.
type ElicitField struct {
	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description,omitempty"`
	Type        string         `json:"type"`
	Required    bool           `json:"required,omitempty"`
	Default     any            `json:"default,omitempty"`
	Options     []ElicitOption `json:"options,omitempty"`
	Multiple    bool           `json:"multiple,omitempty"`
	Format      string         `json:"format,omitempty"` // email, uri, date or date-time
	MinLength   *int           `json:"min_length,omitempty"`
	MaxLength   *int           `json:"max_length,omitempty"`
	Minimum     *float64       `json:"minimum,omitempty"`
	Maximum     *float64       `json:"maximum,omitempty"`
	MinItems    *int           `json:"min_items,omitempty"`
	MaxItems    *int           `json:"max_items,omitempty"`
}

// ElicitOption is one value a choice field may take, and its label.
type ElicitOption struct {
	Value string `json:"value"`
	Title string `json:"title,omitempty"`
}

// ElicitAction is the user's answer: accept (with the form's content),
// decline (an explicit no) or cancel (dismissed without a choice).
type ElicitAction string

const (
	ElicitAccept  ElicitAction = "accept"
	ElicitDecline ElicitAction = "decline"
	ElicitCancel  ElicitAction = "cancel"
)

// ElicitAnswer is the answer to a question. Content is the form's values
// by field name, with accept in form mode. Why, with a decline or cancel
// zot gave itself (nobody could answer, the answer timed out), says so.
type ElicitAnswer struct {
	Action  ElicitAction
	Content map[string]any
	Why     string
}

// Elicitor answers questions in the modes it offers. The MCP client offers
// a server exactly those modes; Ask puts a question to whoever answers and
// waits for the answer, a cancel when ctx ends first. The zero Elicitor
// answers nothing, and nothing is offered.
type Elicitor struct {
	Form, URL bool
	Ask       func(ctx context.Context, q Elicitation) ElicitAnswer
}

// Offers says whether the mode can be answered.
func (e Elicitor) Offers(m ElicitMode) bool {
	return e.Ask != nil && (m == ElicitForm && e.Form || m == ElicitURL && e.URL)
}

// Label is how a field is named to a person: its title, else its name.
func (f ElicitField) Label() string {
	if f.Title != "" {
		return f.Title
	}
	return f.Name
}

// Complete checks the content of an accepted form: every value of its
// field's type and within its bounds, every required field present. A
// field left out takes its default; a name the form does not have is an
// error. The result is what the server is sent.
func (q Elicitation) Complete(content map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for name := range content {
		if !slices.ContainsFunc(q.Fields, func(f ElicitField) bool { return f.Name == name }) {
			return nil, fmt.Errorf("the form has no field %q", truncate(name, 60))
		}
	}
	for _, f := range q.Fields {
		v, ok := content[f.Name]
		if !ok || v == nil {
			if f.Default == nil {
				if f.Required {
					return nil, fmt.Errorf("%s: required", f.Label())
				}
				continue
			}
			v = f.Default
		}
		v, err := f.Check(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", f.Label(), err)
		}
		out[f.Name] = v
	}
	return out, nil
}

// Schema is the form as a requested schema again, for a client that
// shows forms itself (an editor over ACP): only what zot read of the
// server's, so it holds no more than the dialog would show.
func (q Elicitation) Schema() map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, f := range q.Fields {
		p := map[string]any{"type": f.Type}
		set := func(k string, v any, ok bool) {
			if ok {
				p[k] = v
			}
		}
		set("title", f.Title, f.Title != "")
		set("description", f.Description, f.Description != "")
		set("default", f.Default, f.Default != nil)
		set("format", f.Format, f.Format != "")
		set("minLength", f.MinLength, f.MinLength != nil)
		set("maxLength", f.MaxLength, f.MaxLength != nil)
		set("minimum", f.Minimum, f.Minimum != nil)
		set("maximum", f.Maximum, f.Maximum != nil)
		var options []map[string]string
		for _, o := range f.Options {
			options = append(options, map[string]string{"const": o.Value, "title": cmp.Or(o.Title, o.Value)})
		}
		switch {
		case f.Multiple:
			p["type"] = "array"
			p["items"] = map[string]any{"anyOf": options}
			set("minItems", f.MinItems, f.MinItems != nil)
			set("maxItems", f.MaxItems, f.MaxItems != nil)
		case len(options) > 0:
			p["oneOf"] = options
		}
		props[f.Name] = p
		if f.Required {
			required = append(required, f.Name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required}
}

// Check says whether v (as JSON decodes it) is a value of the field, and
// returns it in the form the server is sent.
func (f ElicitField) Check(v any) (any, error) {
	switch f.Type {
	case "boolean":
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, errors.New("want true or false")
	case "number", "integer":
		n, ok := elicitNumber(v)
		if !ok {
			return nil, errors.New("want a number")
		}
		if f.Type == "integer" && n != math.Trunc(n) {
			return nil, errors.New("want a whole number")
		}
		if f.Minimum != nil && n < *f.Minimum || f.Maximum != nil && n > *f.Maximum {
			return nil, fmt.Errorf("want a number %s", f.numberRange())
		}
		return n, nil
	}
	if f.Multiple {
		return f.checkChoices(v)
	}
	s, ok := v.(string)
	if !ok {
		return nil, errors.New("want text")
	}
	// A choice meets the length and format too: a schema may ask for both.
	if len(f.Options) > 0 && !slices.ContainsFunc(f.Options, func(o ElicitOption) bool { return o.Value == s }) {
		return nil, fmt.Errorf("want one of %s", f.optionList())
	}
	n := utf8.RuneCountInString(s)
	switch {
	case f.MinLength != nil && n < *f.MinLength:
		return nil, fmt.Errorf("want at least %d characters", *f.MinLength)
	case f.MaxLength != nil && n > *f.MaxLength:
		return nil, fmt.Errorf("want at most %d characters", *f.MaxLength)
	}
	if err := checkFormat(f.Format, s); err != nil {
		return nil, err
	}
	return s, nil
}

func (f ElicitField) checkChoices(v any) (any, error) {
	var picked []string
	switch x := v.(type) {
	case []string:
		picked = x
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, errors.New("want a list of choices")
			}
			picked = append(picked, s)
		}
	default:
		return nil, errors.New("want a list of choices")
	}
	for _, s := range picked {
		if !slices.ContainsFunc(f.Options, func(o ElicitOption) bool { return o.Value == s }) {
			return nil, fmt.Errorf("%q is not one of %s", truncate(s, 40), f.optionList())
		}
	}
	switch {
	case f.MinItems != nil && len(picked) < *f.MinItems:
		return nil, fmt.Errorf("choose at least %d", *f.MinItems)
	case f.MaxItems != nil && len(picked) > *f.MaxItems:
		return nil, fmt.Errorf("choose at most %d", *f.MaxItems)
	}
	return append([]string{}, picked...), nil
}

// Parse reads a value typed as text: a number, yes or no, a choice by its
// value or title, several separated by commas. Empty text is no value.
func (f ElicitField) Parse(text string) (any, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	switch f.Type {
	case "boolean":
		switch strings.ToLower(text) {
		case "y", "yes", "true":
			return f.Check(true)
		case "n", "no", "false":
			return f.Check(false)
		}
		return nil, errors.New("want yes or no")
	case "number", "integer":
		n, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
			return nil, errors.New("want a number")
		}
		return f.Check(n)
	}
	if f.Multiple {
		var picked []string
		for _, part := range strings.Split(text, ",") {
			if part = strings.TrimSpace(part); part != "" {
				picked = append(picked, f.optionValue(part))
			}
		}
		return f.Check(picked)
	}
	if len(f.Options) > 0 {
		return f.Check(f.optionValue(text))
	}
	return f.Check(text)
}

// Text is a value as it is typed back (see Parse).
func (f ElicitField) Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []string:
		return strings.Join(x, ", ")
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, fmt.Sprint(e))
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprint(v)
}

// optionValue is the value of the option whose value or title is s, or s.
func (f ElicitField) optionValue(s string) string {
	for _, o := range f.Options {
		if o.Value == s || strings.EqualFold(o.Title, s) {
			return o.Value
		}
	}
	return s
}

func (f ElicitField) optionList() string {
	var vs []string
	for _, o := range f.Options {
		vs = append(vs, strconv.Quote(o.Value))
	}
	return truncate(strings.Join(vs, ", "), 200)
}

func (f ElicitField) numberRange() string {
	g := func(n float64) string { return strconv.FormatFloat(n, 'g', -1, 64) }
	switch {
	case f.Minimum != nil && f.Maximum != nil:
		return "from " + g(*f.Minimum) + " to " + g(*f.Maximum)
	case f.Minimum != nil:
		return "of at least " + g(*f.Minimum)
	case f.Maximum != nil:
		return "of at most " + g(*f.Maximum)
	}
	return ""
}

// elicitNumber reads a number as JSON decodes one.
func elicitNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsInf(x, 0) && !math.IsNaN(x)
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		n, err := x.Float64()
		return n, err == nil
	}
	return 0, false
}

// checkFormat checks the string formats MCP forms may ask for.
func checkFormat(format, s string) error {
	switch format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return errors.New("want an email address")
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return errors.New("want a URI, such as https://example.com/")
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return errors.New("want a date, such as 2026-07-28")
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return errors.New("want a date and time, such as 2026-07-28T09:30:00Z")
		}
	}
	return nil
}
