package policy

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

// rawValue converts JSON text to the AST value OPA evaluates, in one pass over the text
// (jsontext's tokenizer, no intermediate Go maps). Its result equals OPA's own conversion
// (util.UnmarshalJSON, then ast.InterfaceToValue; TestRawValueIsOPAsConversion and
// FuzzRawValue compare them) on every text: what the one pass refuses — invalid UTF-8, a
// duplicate name, anything malformed — is converted by OPA's path instead, which decides the
// value or the error as before. An admission request's object is the one text converted per
// request; the one pass costs about a third of OPA's path (BenchmarkObjectValue).
func rawValue(raw []byte) (ast.Value, error) { return rawPart(raw, readAll) }

// rawPart is rawValue with only the part reads holds of each object on the way; the members
// it leaves out are still checked as rawValue checks them (valid JSON, numbers OPA accepts,
// nesting), so a text is refused exactly when rawValue refuses it. When the one pass refuses
// it, OPA's path converts it whole, and decides the value or the error as before.
func rawPart(raw []byte, reads *readTree) (ast.Value, error) {
	d := decoders.Get().(*jsontext.Decoder)
	d.Reset(bytes.NewReader(raw))
	v, err := tokenValue(d, 0, reads)
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

// tokenValue converts the next value, with the part of it reads holds when it is an object.
func tokenValue(d *jsontext.Decoder, depth int, reads *readTree) (ast.Value, error) {
	if depth > maxRawDepth {
		return nil, errTooDeep
	}
	if d.PeekKind() == '"' {
		t, err := stringTerm(d)
		if err != nil {
			return nil, err
		}
		return t.Value, nil
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
	case '0':
		// OPA's checks, as ast.InterfaceToValue makes them: a number whose exponent would make
		// its evaluation cost without bound is refused (then OPA's path reports it).
		s := tok.String()
		if t := ast.InternedIntNumberTermFromString(s); t != nil {
			return t.Value, nil
		}
		return ast.NumberChecked(s)
	case '[':
		var terms []*ast.Term
		for d.PeekKind() != ']' {
			v, err := tokenValue(d, depth+1, readAll)
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
			name, err := stringText(d)
			if err != nil {
				return nil, err
			}
			part := reads.memberOf(name)
			if part == nil {
				if err := skipValue(d, depth+1); err != nil {
					return nil, err
				}
				continue
			}
			key := textTerm(name) // before the next read: name is the decoder's
			v, err := tokenValue(d, depth+1, part)
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

// skipValue reads the next value without converting it, checked as tokenValue checks it: the
// decoder validates the text, numbers must be ones OPA accepts, and the nesting is bounded.
func skipValue(d *jsontext.Decoder, depth int) error {
	if depth > maxRawDepth {
		return errTooDeep
	}
	switch d.PeekKind() {
	case '{', '[':
		tok, err := d.ReadToken()
		if err != nil {
			return err
		}
		object := tok.Kind() == '{'
		end := jsontext.Kind(']')
		if object {
			end = '}'
		}
		for d.PeekKind() != end {
			if object {
				if _, err := d.ReadValue(); err != nil { // the name
					return err
				}
			}
			if err := skipValue(d, depth+1); err != nil {
				return err
			}
		}
		_, err = d.ReadToken()
		return err
	case '0':
		v, err := d.ReadValue()
		if err != nil {
			return err
		}
		if bytes.ContainsAny(v, "eE") {
			_, err = ast.NumberChecked(string(v))
		}
		return err
	}
	_, err := d.ReadValue()
	return err
}

// stringTerm reads a string (a value or an object's name) as a term: one of internedTerms
// when it is one of theirs, without allocating.
func stringTerm(d *jsontext.Decoder) (*ast.Term, error) {
	s, err := stringText(d)
	if err != nil {
		return nil, err
	}
	return textTerm(s), nil
}

// stringText reads a string and returns its text, unquoted; without escapes, the bytes are
// the decoder's, valid until its next read.
func stringText(d *jsontext.Decoder) ([]byte, error) {
	v, err := d.ReadValue()
	if err != nil {
		return nil, err
	}
	if len(v) < 2 || v[0] != '"' {
		return nil, errors.New("not a string")
	}
	if raw := v[1 : len(v)-1]; bytes.IndexByte(raw, '\\') < 0 { // validated: without escapes, the text is the string
		return raw, nil
	}
	return jsontext.AppendUnquote(nil, v)
}

// textTerm is the term of a string: one of internedTerms when it is one of theirs.
func textTerm(s []byte) *ast.Term {
	if t, ok := internedTerms[string(s)]; ok {
		return t
	}
	return ast.StringTerm(string(s))
}

// internedTerms are the strings every driverguard object repeats: the JSON names of the API
// types' fields (apiVersion, metadata, nodeSelector, ...), their kinds, API version and node
// labels. Each is one shared term, not three allocations per occurrence per request. The set
// is fixed (never what requests bring).
var internedTerms = func() map[string]*ast.Term {
	m := map[string]*ast.Term{}
	add := func(s string) {
		if _, ok := m[s]; !ok {
			m[s] = ast.StringTerm(s)
		}
	}
	for _, s := range []string{v1alpha1.GroupVersion.String(), "RBLNDriver", "RBLNClusterPolicy", operator.LabelFamily,
		operator.LabelOSID, operator.LabelOSVersion, operator.LabelKernel, operator.LabelDeployDriver, operator.LabelOwner, "kubernetes.io/hostname"} {
		add(s)
	}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
				add(name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[v1alpha1.RBLNDriver]())
	walk(reflect.TypeFor[v1alpha1.RBLNClusterPolicy]())
	return m
}()
