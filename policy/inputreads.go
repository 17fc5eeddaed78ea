package policy

import (
	"github.com/open-policy-agent/opa/v1/ast"
)

// readTree is the part of a JSON document the active policies can read: all of it, or some of
// its members, each with the part of it they can read. The engine hands OPA an input holding
// that part only: a member no rule can reach is never converted (inputValue).
type readTree struct {
	all  bool
	keys map[string]*readTree
}

// readAll is a tree that reads everything; never modified.
var readAll = &readTree{all: true}

// add marks the document at path (and everything in it) as read.
func (t *readTree) add(path ...string) {
	for _, k := range path {
		if t.all {
			return
		}
		if t.keys == nil {
			t.keys = map[string]*readTree{}
		}
		next := t.keys[k]
		if next == nil {
			next = &readTree{}
			t.keys[k] = next
		}
		t = next
	}
	if !t.all {
		t.all, t.keys = true, nil
	}
}

// member is what can be read of member k: nil when nothing.
func (t *readTree) member(k string) *readTree {
	switch {
	case t == nil:
		return nil
	case t.all:
		return readAll
	}
	return t.keys[k]
}

// memberOf is member with the name as bytes, without allocating.
func (t *readTree) memberOf(k []byte) *readTree {
	switch {
	case t == nil:
		return nil
	case t.all:
		return readAll
	}
	return t.keys[string(k)]
}

// inputReads is the part of input that a rule the query depends on can read. A ref
// input.a.b reads input.a.b whole; a ref whose path leaves plain names (input.a[x],
// input.a[0], input.a[input.b]) reads the document before that, input.a, whole; input alone,
// however it is then used (assigned, passed to a function, walked), reads everything. The
// compiler turns every use of input into such a ref, imports and `with` targets included;
// a bare input variable anywhere else still counts as reading everything.
func inputReads(c *ast.Compiler, query ast.Ref) *readTree {
	t := &readTree{}
	var vis *ast.GenericVisitor
	vis = ast.NewGenericVisitor(func(x any) bool {
		switch x := x.(type) {
		case ast.Ref:
			if !x.HasPrefix(ast.InputRootRef) {
				return false
			}
			path := make([]string, 0, len(x)-1)
			for _, term := range x[1:] {
				s, ok := term.Value.(ast.String)
				if !ok {
					break
				}
				path = append(path, string(s))
			}
			t.add(path...)
			for _, term := range x[1:] {
				vis.Walk(term) // a ref inside the path reads too
			}
			return true
		case ast.Var:
			if x.Equal(ast.InputRootDocument.Value) {
				t.add()
			}
		}
		return false
	})
	walkRules(c, query, func(r *ast.Rule) bool {
		vis.Walk(r)
		return t.all
	})
	return t
}
