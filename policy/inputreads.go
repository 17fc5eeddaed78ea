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

// readAll is a tree that reads everything, readNothing one that reads no member (a document
// converted only to check it); neither is ever modified.
var (
	readAll     = &readTree{all: true}
	readNothing = &readTree{}
)

// add marks the document at path (and everything in it) as read.
func (t *readTree) add(path ...string) {
	if n := t.touch(path...); n != nil && !n.all {
		n.all, n.keys = true, nil
	}
}

// touch marks that the document at path is there when it is (its members need not be read):
// an object there comes with none of its members, anything else whole. It returns the tree
// at path, nil when a document on the way is read whole.
func (t *readTree) touch(path ...string) *readTree {
	for _, k := range path {
		if t.all {
			return nil
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
	return t
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
// a bare input variable anywhere else still counts as reading everything. One call is seen
// through: object.get(input.a, ["b", "c"], default), the library's way to read a field that
// may be absent, reads input.a.b.c (see readsOfRule) — unless a rule replaces the builtin
// (`with object.get as f`): then f is handed whatever object.get's callers pass it, and
// object.get(input.a, ...) reads input.a whole.
func inputReads(c *ast.Compiler, query ast.Ref) *readTree {
	mocked := false
	walkRules(c, query, func(r *ast.Rule) bool {
		ast.WalkExprs(r, func(e *ast.Expr) bool {
			for _, w := range e.With {
				if ref, ok := w.Target.Value.(ast.Ref); ok && ref.Equal(ast.ObjectGet.Ref()) {
					mocked = true
				}
			}
			return mocked
		})
		return mocked
	})
	t := &readTree{}
	walkRules(c, query, func(r *ast.Rule) bool {
		readsOfRule(r, t, !mocked)
		return t.all
	})
	return t
}

// readsOfRule adds to t what rule r can read of input. The compiler hands object.get its
// first argument through a generated variable (__local1__ = input.a; object.get(__local1__,
// ...)): such a variable that appears nowhere but in its binding and as object.get's first
// argument with a constant key reads only the documents at those keys (and that input.a is
// there: its binding is undefined otherwise); used anywhere else, it reads input.a whole.
// Without seeThrough, object.get is a call like any other.
func readsOfRule(r *ast.Rule, t *readTree, seeThrough bool) {
	aliases := map[ast.Var]ast.Ref{}
	ast.WalkExprs(r, func(e *ast.Expr) bool {
		if !seeThrough {
			return true
		}
		if v, ref, ok := inputAlias(e); ok {
			if prev, seen := aliases[v]; seen && !prev.Equal(ref) {
				ref = ast.InputRootRef // bound twice, to different documents (never seen): read everything
			}
			aliases[v] = ref
		}
		return false
	})
	escaped := map[ast.Var]bool{}
	var vis *ast.GenericVisitor
	walkAll := func(terms ...*ast.Term) {
		for _, term := range terms {
			vis.Walk(term)
		}
	}
	vis = ast.NewGenericVisitor(func(x any) bool {
		switch x := x.(type) {
		case ast.Ref:
			if !x.HasPrefix(ast.InputRootRef) {
				return false
			}
			path, _ := inputPath(x)
			t.add(path...)
			walkAll(x[1:]...) // a ref inside the path reads too
			return true
		case *ast.Expr:
			terms, _ := x.Terms.([]*ast.Term)
			if v, ref, ok := inputAlias(x); ok && aliases[v].Equal(ref) {
				path, _ := inputPath(ref)
				t.touch(path...)
				walkAll(ref[1:]...)
			} else if arg, keys, ok := objectGetArg(x); ok && seeThrough {
				ref, isRef := arg.(ast.Ref)
				if v, isVar := arg.(ast.Var); isVar {
					ref, isRef = aliases[v]
				}
				if !isRef || !ref.HasPrefix(ast.InputRootRef) {
					return false
				}
				path, whole := inputPath(ref)
				if whole {
					path = append(path, keys...)
				}
				t.add(path...)
				walkAll(ref[1:]...)
				walkAll(terms[0])
				walkAll(terms[2:]...)
			} else {
				return false
			}
			for _, w := range x.With {
				vis.Walk(w)
			}
			return true
		case ast.Var:
			if x.Equal(ast.InputRootDocument.Value) {
				t.add()
			}
			if _, ok := aliases[x]; ok {
				escaped[x] = true
			}
		}
		return false
	})
	vis.Walk(r)
	for v := range escaped {
		path, _ := inputPath(aliases[v])
		t.add(path...)
	}
}

// inputAlias recognizes the binding of a generated variable to a ref to input whose path is
// all plain names (input.a[x] binds to each member of input.a: it reads input.a whole).
func inputAlias(e *ast.Expr) (ast.Var, ast.Ref, bool) {
	terms, ok := e.Terms.([]*ast.Term)
	if !ok || len(terms) != 3 || !e.IsEquality() {
		return "", nil, false
	}
	for _, pair := range [][2]*ast.Term{{terms[1], terms[2]}, {terms[2], terms[1]}} {
		v, isVar := pair[0].Value.(ast.Var)
		ref, isRef := pair[1].Value.(ast.Ref)
		if isVar && v.IsGenerated() && isRef && ref.HasPrefix(ast.InputRootRef) {
			if _, whole := inputPath(ref); whole {
				return v, ref, true
			}
		}
	}
	return "", nil, false
}

// inputPath is the path of a ref to input up to its first part that is not a plain name, and
// whether that is all of it.
func inputPath(ref ast.Ref) ([]string, bool) {
	path := make([]string, 0, len(ref)-1)
	for _, term := range ref[1:] {
		s, ok := term.Value.(ast.String)
		if !ok {
			return path, false
		}
		path = append(path, string(s))
	}
	return path, true
}

// objectGetArg recognizes object.get(<arg>, <key>, <default>) with a constant key: a name,
// or an array of names (up to its first part that is not a name). It returns the first
// argument's value and the key's path.
func objectGetArg(e *ast.Expr) (ast.Value, []string, bool) {
	terms, ok := e.Terms.([]*ast.Term)
	if !ok || len(terms) < 4 || !e.Operator().Equal(ast.ObjectGet.Ref()) {
		return nil, nil, false
	}
	switch key := terms[2].Value.(type) {
	case ast.String:
		return terms[1].Value, []string{string(key)}, true
	case *ast.Array:
		var keys []string
		for i := range key.Len() {
			s, ok := key.Elem(i).Value.(ast.String)
			if !ok {
				break
			}
			keys = append(keys, string(s))
		}
		return terms[1].Value, keys, true
	}
	return nil, nil, false
}
