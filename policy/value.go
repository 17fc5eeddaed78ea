package policy

import (
	"cmp"
	"encoding/json"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	authenticationv1 "k8s.io/api/authentication/v1"
)

// inputValue converts the input document to the AST value OPA evaluates. The result equals
// the AST of the document's JSON form (what `driverguard policy input` prints; a test keeps
// the two equal), but the parts driverguard defines — the envelope, the user and the routing
// verdict — are built directly instead of through JSON text, and an object given as JSON text
// (an admission request's) is parsed once.
//
// routing is input.routing (nil leaves it out): in.Routing, or what the engine decided to
// hand over ([policySet.routingOf]). reads is the part of the document the policies can read
// (readAll for all of it): the rest is left out, which no rule can tell ([inputReads]). The
// objects are checked whole all the same: a text their conversion refuses is an error whether
// a policy reads it or not.
func inputValue(in *Input, routing *Routing, reads *readTree) (ast.Value, error) {
	terms := make([][2]*ast.Term, 0, 6)
	part := reads.member("object")
	obj, err := objectValue(in.Object, cmp.Or(part, readNothing)) // checked even when not read
	if err != nil {
		return nil, fmt.Errorf("policy: encoding input.object: %w", err)
	}
	if part != nil {
		terms = append(terms, [2]*ast.Term{ast.InternedTerm("object"), ast.NewTerm(obj)})
	}
	if reads.member("operation") != nil {
		terms = append(terms, [2]*ast.Term{ast.InternedTerm("operation"), ast.StringTerm(in.Operation)})
	}
	if reads.member("source") != nil {
		terms = append(terms, [2]*ast.Term{ast.InternedTerm("source"), ast.StringTerm(string(in.Source))})
	}
	if in.OldObject != nil {
		// Checked even when no policy reads it: a text its conversion refuses fails the
		// evaluation either way.
		part := reads.member("oldObject")
		old, err := objectValue(in.OldObject, cmp.Or(part, readNothing))
		if err != nil {
			return nil, fmt.Errorf("policy: encoding input.oldObject: %w", err)
		}
		if part != nil {
			terms = append(terms, [2]*ast.Term{ast.InternedTerm("oldObject"), ast.NewTerm(old)})
		}
	}
	if in.UserInfo != nil && reads.member("userInfo") != nil {
		terms = append(terms, [2]*ast.Term{ast.InternedTerm("userInfo"), ast.NewTerm(userValue(in.UserInfo))})
	}
	if routing != nil {
		terms = append(terms, [2]*ast.Term{ast.InternedTerm("routing"), ast.NewTerm(routingValue(routing))})
	}
	return ast.NewObject(terms...), nil
}

// objectValue converts the part reads holds of an object: JSON text as it is ([rawPart]),
// anything else through its JSON text.
func objectValue(x any, reads *readTree) (ast.Value, error) {
	raw, ok := x.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(x); err != nil {
			return nil, err
		}
	}
	return rawPart(raw, reads)
}

func str(k string, v string) [2]*ast.Term {
	return [2]*ast.Term{ast.InternedTerm(k), ast.StringTerm(v)}
}

func stringArray(ss []string) *ast.Term {
	terms := make([]*ast.Term, len(ss))
	for i, s := range ss {
		terms[i] = ast.StringTerm(s)
	}
	return ast.ArrayTerm(terms...)
}

func stringMap(m map[string]string) *ast.Term {
	kv := make([][2]*ast.Term, 0, len(m))
	for k, v := range m {
		kv = append(kv, [2]*ast.Term{ast.StringTerm(k), ast.StringTerm(v)})
	}
	return ast.ObjectTerm(kv...)
}

// userValue builds the JSON form of authenticationv1.UserInfo (omitempty fields left out).
func userValue(u *authenticationv1.UserInfo) ast.Value {
	var kv [][2]*ast.Term
	if u.Username != "" {
		kv = append(kv, str("username", u.Username))
	}
	if u.UID != "" {
		kv = append(kv, str("uid", u.UID))
	}
	if len(u.Groups) > 0 {
		kv = append(kv, [2]*ast.Term{ast.InternedTerm("groups"), stringArray(u.Groups)})
	}
	if len(u.Extra) > 0 {
		extra := make([][2]*ast.Term, 0, len(u.Extra))
		for k, v := range u.Extra {
			extra = append(extra, [2]*ast.Term{ast.StringTerm(k), stringArray(v)})
		}
		kv = append(kv, [2]*ast.Term{ast.InternedTerm("extra"), ast.ObjectTerm(extra...)})
	}
	return ast.NewObject(kv...)
}

// routingValue builds the JSON form of a Routing.
func routingValue(r *Routing) ast.Value {
	pools := make([]*ast.Term, len(r.Pools))
	for i := range r.Pools {
		p := &r.Pools[i]
		pools[i] = ast.ObjectTerm(
			str("name", p.Name), str("daemonSet", p.DaemonSet),
			str("family", p.Family), str("os", p.OS), str("osVersion", p.OSVersion), str("kernel", p.Kernel),
			str("tag", p.Tag), str("image", p.Image), str("reason", p.Reason),
			[2]*ast.Term{ast.InternedTerm("nodes"), stringArray(p.Nodes)},
		)
	}
	unpooled := make([]*ast.Term, len(r.Unpooled))
	for i, n := range r.Unpooled {
		unpooled[i] = ast.ObjectTerm(str("name", n.Name), str("reason", n.Reason))
	}
	ties := make([]*ast.Term, len(r.Ties))
	for i, t := range r.Ties {
		ties[i] = ast.ObjectTerm(
			[2]*ast.Term{ast.InternedTerm("resources"), stringArray(t.Resources)},
			[2]*ast.Term{ast.InternedTerm("nodes"), stringArray(t.Nodes)},
			[2]*ast.Term{ast.InternedTerm("total"), ast.InternedTerm(t.Total)},
		)
	}
	potential := make([]*ast.Term, len(r.PotentialTies))
	for i, p := range r.PotentialTies {
		potential[i] = ast.ObjectTerm(
			str("resource", p.Resource),
			[2]*ast.Term{ast.InternedTerm("identical"), ast.InternedTerm(p.Identical)},
			[2]*ast.Term{ast.InternedTerm("labels"), stringMap(p.Labels)},
		)
	}
	return ast.NewObject(
		[2]*ast.Term{ast.InternedTerm("selected"), ast.InternedTerm(r.Selected)},
		[2]*ast.Term{ast.InternedTerm("nodes"), ast.InternedTerm(r.Nodes)},
		[2]*ast.Term{ast.InternedTerm("pools"), ast.ArrayTerm(pools...)},
		[2]*ast.Term{ast.InternedTerm("unpooled"), ast.ArrayTerm(unpooled...)},
		[2]*ast.Term{ast.InternedTerm("ties"), ast.ArrayTerm(ties...)},
		[2]*ast.Term{ast.InternedTerm("potentialTies"), ast.ArrayTerm(potential...)},
	)
}

// nodeValue is a node of data.driverguard_cluster.nodes, with the labels of keys only.
func nodeValue(n *ClusterNode, keys map[string]bool) ast.Value {
	kv := make([][2]*ast.Term, 0, len(keys))
	for k, v := range n.Labels {
		if keys[k] {
			kv = append(kv, [2]*ast.Term{ast.StringTerm(k), ast.StringTerm(v)})
		}
	}
	return ast.NewObject(
		str("name", n.Name),
		[2]*ast.Term{ast.InternedTerm("labels"), ast.ObjectTerm(kv...)},
		str("owner", n.Owner),
		str("pool", n.Pool),
	)
}
