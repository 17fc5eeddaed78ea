package action

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/driverguard/driverguard/finding"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/release"
	"github.com/driverguard/driverguard/routing"
	"github.com/driverguard/driverguard/suite"
	"github.com/driverguard/driverguard/webhook"
)

// suiteRun is one suite ready to judge its cases: its policies compiled once, its inventory
// read once.
type suiteRun struct {
	s      *suite.Suite
	engine *policy.Engine
	// rules are the IDs of the rule bodies of the suite's enabled policies; judgedBy those
	// and the built-in rules, which every judged object passes unless a result says
	// otherwise.
	rules, judgedBy []string
	inventory       inventory
}

// inventory is a cluster read from a suite.
type inventory struct {
	nodes     []routing.Node
	drivers   []v1alpha1.RBLNDriver
	policies  []v1alpha1.RBLNClusterPolicy
	workloads *cluster.Workloads
	// sources say which parts the suite gave (a part not given is unknown, as for check).
	sources cluster.Sources
}

// compileSuite compiles the policies of s (with the bundled library unless it says library:
// false) and returns the suite ready to judge, its inventory not read yet, with the rules
// of its enabled policies.
func (t *Test) compileSuite(ctx context.Context, s *suite.Suite) (*suiteRun, []finding.Rule, error) {
	dirs := make([]string, 0, len(s.Policies))
	for _, p := range s.Policies {
		dirs = append(dirs, s.Resolve(p))
	}
	engine, err := Policy{Dirs: dirs}.newEngine(ctx, policy.Options{Metrics: prometheus.NewRegistry(),
		MaxFileBytes: t.cfg.maxValuesBytes(), ExcludeLibrary: !s.WithLibrary()})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", s.File, err)
	}
	run := &suiteRun{s: s, engine: engine}
	var rules []finding.Rule
	for _, r := range engine.Rules() {
		if !r.Disabled {
			rules = append(rules, r)
			run.rules = append(run.rules, r.ID)
		}
	}
	run.judgedBy = append(slices.Clone(run.rules), BuiltInRules...)
	return run, rules, nil
}

// readInventory reads inv over base, kind by kind.
func (t *Test) readInventory(ctx context.Context, s *suite.Suite, inv *suite.Inventory, base inventory) (inventory, error) {
	out := base
	var err error
	source := func(o *suite.Objects, what string, n int) cluster.Source {
		return cluster.Source{Given: true, From: fmt.Sprintf("the inventory's %s (%s:%d)", what, s.File, o.Line), Count: n}
	}
	if !inv.Nodes.Empty() {
		if out.nodes, err = readObjects(ctx, t.cfg, s, inv.Nodes, "nodes", cluster.ReadNodes); err != nil {
			return out, err
		}
		out.sources.Nodes = source(inv.Nodes, "nodes", len(out.nodes))
	}
	if !inv.Drivers.Empty() {
		if out.drivers, err = readObjects(ctx, t.cfg, s, inv.Drivers, "drivers", cluster.ReadDrivers); err != nil {
			return out, err
		}
		out.sources.Drivers = source(inv.Drivers, "drivers", len(out.drivers))
	}
	if !inv.ClusterPolicy.Empty() {
		if out.policies, err = readObjects(ctx, t.cfg, s, inv.ClusterPolicy, "clusterPolicy", cluster.ReadClusterPolicies); err != nil {
			return out, err
		}
		out.sources.ClusterPolicy = source(inv.ClusterPolicy, "clusterPolicy", len(out.policies))
	}
	if !inv.Pods.Empty() {
		if out.workloads, err = readObjects(ctx, t.cfg, s, inv.Pods, "pods", cluster.ReadWorkloads); err != nil {
			return out, err
		}
		out.sources.Workloads = source(inv.Pods, "pods", len(out.workloads.Pods))
	}
	return out, nil
}

// readObjects reads the files and inline objects of o as one stream with read.
func readObjects[T any](ctx context.Context, cfg *Configuration, s *suite.Suite, o *suite.Objects, what string,
	read func(context.Context, string, cluster.ReadOptions) (T, error)) (T, error) {
	var zero T
	stream, err := objectStream(ctx, cfg, s, o)
	if err != nil {
		return zero, err
	}
	v, err := read(ctx, "-", cluster.ReadOptions{Stdin: bytes.NewReader(stream)})
	if err != nil {
		return zero, &suite.Error{File: s.File, Line: o.Line, Msg: fmt.Sprintf("%s: %v", what, err)}
	}
	return v, nil
}

// objectStream is the files of o then its inline objects as one YAML stream, within the
// inventory limit in all. Files must be YAML or JSON (a NUL byte stops the reading); inline
// objects are written as JSON, which is no larger than the suite that held them.
func objectStream(ctx context.Context, cfg *Configuration, s *suite.Suite, o *suite.Objects) ([]byte, error) {
	limit := cfg.readOptions().Limit()
	var buf bytes.Buffer
	tooLarge := func(line int) error {
		return &suite.Error{File: s.File, Line: line, Msg: withLimitHint(&decode.TooLargeError{Name: "the objects given here", Limit: limit}, FlagMaxInventorySize).Error()}
	}
	for _, p := range o.Files {
		if int64(buf.Len()) >= limit {
			return nil, tooLarge(p.Line)
		}
		data, err := decode.ReadText(ctx, s.Resolve(p), nil, limit-int64(buf.Len()))
		if err != nil {
			return nil, &suite.Error{File: s.File, Line: p.Line, Msg: withLimitHint(err, FlagMaxInventorySize).Error()}
		}
		separate(&buf)
		buf.Write(data)
	}
	for _, m := range o.Inline {
		data, err := json.Marshal(m)
		if err != nil {
			return nil, &suite.Error{File: s.File, Line: o.Line, Msg: err.Error()}
		}
		separate(&buf)
		buf.Write(data)
		if int64(buf.Len()) > limit {
			return nil, tooLarge(o.Line)
		}
	}
	return buf.Bytes(), nil
}

// separate ends the document in buf, if any, so that the next starts a document of its own
// (the first is document 1 in messages).
func separate(buf *bytes.Buffer) {
	if buf.Len() > 0 {
		buf.WriteString("\n---\n")
	}
}

// caseObjects reads the objects of a case: the RBLNDrivers and RBLNClusterPolicy, and the
// driver DaemonSets apart.
func (t *Test) caseObjects(ctx context.Context, s *suite.Suite, o *suite.Objects) (release.Objects, []decode.Document, error) {
	stream, err := objectStream(ctx, t.cfg, s, o)
	if err != nil {
		return release.Objects{}, nil, err
	}
	const source = "the objects"
	docs, err := renderedDocuments(stream, source)
	if err != nil {
		return release.Objects{}, nil, &suite.Error{File: s.File, Line: o.Line, Msg: err.Error()}
	}
	var daemonSets []decode.Document
	for _, d := range docs {
		switch {
		case d.Kind == "DaemonSet" && d.APIVersion == "apps/v1":
			daemonSets = append(daemonSets, d)
		case d.Kind == "RBLNDriver" || d.Kind == "RBLNClusterPolicy":
		default:
			return release.Objects{}, nil, &suite.Error{File: s.File, Line: o.Line, Msg: fmt.Sprintf(
				"a %s %s among the objects: a case judges RBLNDrivers, the RBLNClusterPolicy and driver DaemonSets (apps/v1) only",
				validation.Truncate(d.APIVersion, 80), validation.Truncate(d.Kind, 80))}
		}
	}
	objs, err := objectsOf(docs, source)
	if err != nil {
		return objs, nil, &suite.Error{File: s.File, Line: o.Line, Msg: err.Error()}
	}
	if objs.ClusterPolicy == nil && len(objs.Drivers) == 0 && len(daemonSets) == 0 {
		return objs, nil, &suite.Error{File: s.File, Line: o.Line, Msg: "no RBLNDriver, RBLNClusterPolicy or driver DaemonSet (apps/v1) among the objects"}
	}
	// Objects are applied one by one, as kubectl apply would: no release owns them, so none
	// of the stored drivers is deleted for not being among them.
	objs.ReleaseName = ""
	return objs, daemonSets, nil
}

// documentMeta is the metadata of a document.
func documentMeta(d decode.Document) (metav1.ObjectMeta, error) {
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	err := json.Unmarshal(d.Data, &obj)
	return obj.Metadata, err
}

// state is a cluster.State of its own for one case (applying objects changes it).
func (inv inventory) state() *cluster.State {
	st := cluster.FromLists(slices.Clone(inv.nodes), slices.Clone(inv.drivers), slices.Clone(inv.policies), inv.workloads)
	st.SetSources(inv.sources)
	return st
}

// objectBody is the one object of o as JSON.
func objectBody(ctx context.Context, cfg *Configuration, s *suite.Suite, o *suite.Objects) ([]byte, error) {
	if len(o.Inline) == 1 {
		data, err := json.Marshal(o.Inline[0])
		if err == nil && len(data) > webhook.MaxReviewBytes {
			err = fmt.Errorf("the review is larger than the limit of %s, the webhook's: it would refuse the request (413) unread", decode.FormatBytes(webhook.MaxReviewBytes))
		}
		if err != nil {
			return nil, &suite.Error{File: s.File, Line: o.Line, Msg: err.Error()}
		}
		return data, nil
	}
	data, err := decode.ReadText(ctx, s.Resolve(o.Files[0]), nil, webhook.MaxReviewBytes)
	var tl *decode.TooLargeError
	if errors.As(err, &tl) {
		return nil, &suite.Error{File: s.File, Line: o.Files[0].Line, Msg: err.Error() + ", the webhook's: it would refuse the request (413) unread"}
	}
	if err != nil {
		return nil, &suite.Error{File: s.File, Line: o.Files[0].Line, Msg: err.Error()}
	}
	return data, nil
}
