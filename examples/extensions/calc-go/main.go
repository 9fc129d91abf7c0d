// calc: arithmetic the model can trust, written with the Go SDK
// (sdk/go/zotext.go).
//
//	tool calc {"expression": "2*(3+4)^2"}   → 98
//	/calc 1/3 + 1/6                         → 1/3 + 1/6 = 0.5
//
// Numbers, + - * / % ^, parentheses, unary minus, pi and e. Build it with
// `go build -o calc .`.
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode"

	"zot.local/zotext"
)

func main() {
	ext := zotext.New("calc", "1.0.0")
	ext.Tool("calc", "Evaluate an arithmetic expression exactly: numbers, + - * / % ^, parentheses, pi, e. Use it instead of doing arithmetic in your head.",
		json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string","description":"e.g. 2*(3+4)^2"}},"required":["expression"]}`),
		func(args json.RawMessage) zotext.ToolResult {
			var in struct {
				Expression string `json:"expression"`
			}
			if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.Expression) == "" {
				return zotext.TextErrorResult(`calc needs {"expression": "<arithmetic>"}`)
			}
			v, err := eval(in.Expression)
			if err != nil {
				return zotext.TextErrorResult(err.Error())
			}
			return zotext.TextResult(format(v))
		})
	ext.Command("calc", "evaluate arithmetic: /calc 2*(3+4)", func(args string) zotext.Response {
		if strings.TrimSpace(args) == "" {
			return zotext.Display("usage: /calc <expression>, e.g. /calc 2*(3+4)^2")
		}
		v, err := eval(args)
		if err != nil {
			return zotext.Response{Action: "noop", Error: err.Error()}
		}
		return zotext.Display(args + " = " + format(v))
	})
	if err := ext.Run(); err != nil {
		ext.Logf("calc: %v", err)
		os.Exit(1)
	}
}

func format(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// eval parses and evaluates s: a recursive descent over
//
//	expr   = term {("+"|"-") term}
//	term   = power {("*"|"/"|"%") power}
//	power  = unary ["^" power]
//	unary  = "-" unary | atom
//	atom   = number | "pi" | "e" | "(" expr ")"
func eval(s string) (float64, error) {
	p := &parser{s: s}
	v, err := p.expr()
	if err != nil {
		return 0, err
	}
	if p.skip(); p.i < len(p.s) {
		return 0, fmt.Errorf("unexpected %q at %d in %q", p.s[p.i:], p.i+1, s)
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q has no finite value", s)
	}
	return v, nil
}

type parser struct {
	s     string
	i     int
	depth int
}

func (p *parser) skip() {
	for p.i < len(p.s) && unicode.IsSpace(rune(p.s[p.i])) {
		p.i++
	}
}

func (p *parser) peek() byte {
	p.skip()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *parser) expr() (float64, error) {
	if p.depth++; p.depth > 200 {
		return 0, fmt.Errorf("expression nested too deeply")
	}
	defer func() { p.depth-- }()
	v, err := p.term()
	for err == nil {
		op := p.peek()
		if op != '+' && op != '-' {
			break
		}
		p.i++
		var w float64
		if w, err = p.term(); op == '+' {
			v += w
		} else {
			v -= w
		}
	}
	return v, err
}

func (p *parser) term() (float64, error) {
	v, err := p.power()
	for err == nil {
		op := p.peek()
		if op != '*' && op != '/' && op != '%' {
			break
		}
		p.i++
		var w float64
		if w, err = p.power(); err != nil {
			break
		}
		switch {
		case op == '*':
			v *= w
		case w == 0:
			return 0, fmt.Errorf("division by zero")
		case op == '/':
			v /= w
		default:
			v = math.Mod(v, w)
		}
	}
	return v, err
}

func (p *parser) power() (float64, error) {
	v, err := p.unary()
	if err == nil && p.peek() == '^' {
		p.i++
		var w float64
		if w, err = p.power(); err == nil {
			v = math.Pow(v, w)
		}
	}
	return v, err
}

func (p *parser) unary() (float64, error) {
	if p.peek() == '-' {
		p.i++
		v, err := p.unary()
		return -v, err
	}
	return p.atom()
}

func (p *parser) atom() (float64, error) {
	c := p.peek()
	switch {
	case c == '(':
		p.i++
		v, err := p.expr()
		if err == nil && p.peek() != ')' {
			err = fmt.Errorf("missing ) in %q", p.s)
		}
		p.i++
		return v, err
	case strings.HasPrefix(p.s[p.i:], "pi"):
		p.i += 2
		return math.Pi, nil
	case c == 'e':
		p.i++
		return math.E, nil
	case c >= '0' && c <= '9' || c == '.':
		start := p.i
		for p.i < len(p.s) && (p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '.') {
			p.i++
		}
		return strconv.ParseFloat(p.s[start:p.i], 64)
	case c == 0:
		return 0, fmt.Errorf("%q ends too early", p.s)
	}
	return 0, fmt.Errorf("unexpected %q at %d in %q", p.s[p.i:], p.i+1, p.s)
}
