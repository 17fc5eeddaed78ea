package policy

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"
)

// rawValue converts JSON text to the AST value OPA evaluates, in one pass over the text
// (jsontext's tokenizer, no intermediate Go maps). Its result equals OPA's own conversion
// (util.UnmarshalJSON, then ast.InterfaceToValue; TestRawValueIsOPAsConversion and
// FuzzRawValue compare them) on every text: what the one pass refuses — invalid UTF-8, a
// duplicate name, anything malformed — is converted by OPA's path instead, which decides the
// value or the error as before. An admission request's object is the one text converted per
// request; the one pass costs about a third of OPA's path (BenchmarkObjectValue).
func rawValue(raw []byte) (ast.Value, error) {
	d := decoders.Get().(*jsontext.Decoder)
	d.Reset(bytes.NewReader(raw))
	v, err := tokenValue(d, 0)
	if err == nil {
		if _, err = d.ReadToken(); err == nil {
			err = errTrailing
		}
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	d.Reset(bytes.NewReader(nil))
	decoders.Put(d)
	if err != nil {
		return opaValue(raw)
	}
	return v, nil
}

var (
	decoders    = sync.Pool{New: func() any { return jsontext.NewDecoder(bytes.NewReader(nil)) }}
	errTrailing = errors.New("data after the top-level value")
	errTooDeep  = errors.New("nested too deeply")
)

// maxRawDepth bounds the nesting rawValue follows by recursion; deeper text takes OPA's path.
const maxRawDepth = 512

func tokenValue(d *jsontext.Decoder, depth int) (ast.Value, error) {
	if depth > maxRawDepth {
		return nil, errTooDeep
	}
	tok, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 'n':
		return ast.Null{}, nil
	case 't':
		return ast.Boolean(true), nil
	case 'f':
		return ast.Boolean(false), nil
	case '"':
		return ast.String(tok.String()), nil
	case '0':
		return ast.Number(tok.String()), nil
	case '[':
		var terms []*ast.Term
		for d.PeekKind() != ']' {
			v, err := tokenValue(d, depth+1)
			if err != nil {
				return nil, err
			}
			terms = append(terms, ast.NewTerm(v))
		}
		if _, err := d.ReadToken(); err != nil {
			return nil, err
		}
		return ast.NewArray(terms...), nil
	case '{':
		var kvs [][2]*ast.Term
		for d.PeekKind() != '}' {
			k, err := d.ReadToken()
			if err != nil {
				return nil, err
			}
			key := ast.StringTerm(k.String())
			v, err := tokenValue(d, depth+1)
			if err != nil {
				return nil, err
			}
			kvs = append(kvs, [2]*ast.Term{key, ast.NewTerm(v)})
		}
		if _, err := d.ReadToken(); err != nil {
			return nil, err
		}
		return ast.NewObject(kvs...), nil
	}
	return nil, errors.New("unexpected token")
}

// opaValue is OPA's own conversion of JSON text: util.UnmarshalJSON, then ast.InterfaceToValue.
func opaValue(raw []byte) (ast.Value, error) {
	var doc any
	if err := util.UnmarshalJSON(raw, &doc); err != nil {
		return nil, err
	}
	return ast.InterfaceToValue(doc)
}
