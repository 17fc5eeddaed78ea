package policy

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
)

// maxJSONDepth bounds nesting, as encoding/json does.
const maxJSONDepth = 10000

// parseJSONValue parses JSON text into the AST value OPA evaluates, in one pass: the value
// util.UnmarshalJSON followed by ast.InterfaceToValue produce in two (numbers keep their
// literal text, a repeated object key keeps its last value, invalid UTF-8 becomes U+FFFD). An
// admission request's object is converted this way for every evaluation, so the second pass
// and its intermediate maps are worth saving. Invalid JSON is an error naming the offset.
func parseJSONValue(data []byte) (ast.Value, error) {
	p := jsonParser{data: data}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.data) {
		return nil, p.errorf("unexpected data after the value")
	}
	return v, nil
}

type jsonParser struct {
	data []byte
	pos  int
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *jsonParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (ast.Value, error) {
	if depth > maxJSONDepth {
		return nil, p.errorf("nested too deeply")
	}
	p.space()
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return ast.String(s), nil
	case c == 't':
		return p.literal("true", ast.Boolean(true))
	case c == 'f':
		return p.literal("false", ast.Boolean(false))
	case c == 'n':
		return p.literal("null", ast.Null{})
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return nil, p.errorf("unexpected character %q", p.data[p.pos])
}

func (p *jsonParser) literal(word string, v ast.Value) (ast.Value, error) {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return nil, p.errorf("invalid literal")
	}
	p.pos += len(word)
	return v, nil
}

func (p *jsonParser) object(depth int) (ast.Value, error) {
	p.pos++ // {
	obj := ast.NewObject()
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return obj, nil
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("expected an object key")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("expected ':' after an object key")
		}
		p.pos++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		obj.Insert(ast.StringTerm(k), ast.NewTerm(v))
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of input in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return obj, nil
		default:
			return nil, p.errorf("expected ',' or '}' in an object")
		}
	}
}

func (p *jsonParser) array(depth int) (ast.Value, error) {
	p.pos++ // [
	var elems []*ast.Term
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return ast.NewArray(), nil
	}
	for {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		elems = append(elems, ast.NewTerm(v))
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of input in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return ast.NewArray(elems...), nil
		default:
			return nil, p.errorf("expected ',' or ']' in an array")
		}
	}
}

// str reads a string literal. Plain strings (no escapes, valid UTF-8, no control
// characters) are sliced as they are; others are decoded by encoding/json.
func (p *jsonParser) str() (string, error) {
	start := p.pos
	p.pos++ // "
	plain := true
	for p.pos < len(p.data) {
		switch c := p.data[p.pos]; {
		case c == '"':
			p.pos++
			raw := p.data[start+1 : p.pos-1]
			if plain && utf8.Valid(raw) {
				return string(raw), nil
			}
			var s string
			if err := json.Unmarshal(p.data[start:p.pos], &s); err != nil {
				p.pos = start
				return "", p.errorf("invalid string: %v", err)
			}
			return s, nil
		case c == '\\':
			plain = false
			p.pos += 2
		case c < 0x20:
			p.pos = start
			return "", p.errorf("control character in a string")
		default:
			p.pos++
		}
	}
	p.pos = start
	return "", p.errorf("unterminated string")
}

// number reads a number literal (JSON's grammar) and keeps its text, as json.Number does.
func (p *jsonParser) number() (ast.Value, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.data[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == '0':
		p.pos++
	case digits() == 0:
		return nil, p.errorf("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, p.errorf("invalid number: no digits after '.'")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errorf("invalid number: no digits in the exponent")
		}
	}
	return ast.Number(p.data[start:p.pos]), nil
}
