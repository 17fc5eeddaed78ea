package decision

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driverguard/driverguard/policy"
)

// Updates are judged by what they change (docs/webhook.md "RBLNDriver"). This file is the one home of that rule:
// an UPDATE of an object being deleted, or one that leaves the spec as it was, is allowed as
// it is; otherwise a finding the stored object already had — a syntax error, a selector
// conflict, a policy deny, matched by a key — is a warning, and only what the update
// introduces is denied.

// beingDeleted reports an UPDATE of an object whose deletion has begun (finalizer removal,
// status while it terminates): always allowed, so that nothing holds an object in Terminating.
func beingDeleted(op string, deletion *metav1.Time) bool {
	return op == policy.OperationUpdate && deletion != nil
}

// unchanged reports an UPDATE that leaves the spec as it was (finalizers, labels, annotations,
// Helm's ownership annotations on every upgrade): nothing the decision judges changes, so it is
// allowed as it is. The chart's webhook configurations do not even send it (matchConditions
// object.spec != oldObject.spec), so `check` and `review` reach the verdict the cluster does.
func unchanged[S any](op string, spec, old S) bool {
	return op == policy.OperationUpdate && equality.Semantic.DeepEqual(spec, old)
}

// keysOf is the set of keys of what the stored object had (nil on CREATE: nothing).
func keysOf[T any, K comparable](before []T, key func(T) K) map[K]bool {
	if len(before) == 0 {
		return nil
	}
	had := make(map[K]bool, len(before))
	for _, x := range before {
		had[key(x)] = true
	}
	return had
}

// introduced splits now — what the object under review gets — into what the update
// introduces and what the stored object already had (its key is in had), in now's order.
func introduced[T any, K comparable](now []T, key func(T) K, had map[K]bool) (intro, kept []T) {
	if len(had) == 0 {
		return now, nil
	}
	for _, x := range now {
		if had[key(x)] {
			kept = append(kept, x)
		} else {
			intro = append(intro, x)
		}
	}
	return intro, kept
}

// errorKey matches a syntax error of the stored object: the same type, field, value and detail.
func errorKey(e *field.Error) string {
	return fmt.Sprintf("%s\x00%s\x00%#v\x00%s", e.Type, e.Field, e.BadValue, e.Detail)
}

// messageKey matches a policy deny of the stored object: the same package, rule and message.
func messageKey(m policy.Message) policy.Message { return m }

// preexisting turns a denial the stored object already had into a warning.
func preexisting(f Finding) Finding {
	f.Message += " (the stored object already has this; the update does not introduce it, so it is allowed: fix it when you can)"
	return f
}
