package audit

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/finding"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/routing"
)

const (
	// ClusterReportName is the report of what no driver owns: unowned nodes, owner labels
	// naming no driver, the RBLNClusterPolicy.
	ClusterReportName = "driverguard-cluster"
	// DefaultMaxResults is the most results a report lists (--audit-max-results); its
	// summary counts every one.
	DefaultMaxResults = 100
	// MaxReportBytes bounds the results a report lists, encoded, whatever MaxResults allows:
	// a ClusterReport stays well under what the API server accepts in one object (about
	// 1.5 MiB); the results beyond are omitted and counted as any others.
	MaxReportBytes = 1 << 20
	// NodeSample is the most nodes a drift finding names; its nodes property counts all.
	NodeSample = 10
	// RuleImageNotFound: an image a pool pulls that its registry answers 404 for.
	RuleImageNotFound = routing.ReasonDriverImageNotFound
	// RuleImageNotVerified: an image a pool pulls that no registry answered for (unreachable,
	// timeout, TLS, DNS, 401/403): a warning, the pool proceeds.
	RuleImageNotVerified = finding.RuleDriverImageNotVerified
	// RuleImageCheck: what the registry check covered (the cluster report's one result: how
	// many images were found, missing, not verified): a pass, or a warning when some images
	// were not verified.
	RuleImageCheck = finding.RuleDriverImageCheck
	// RuleAdmission is the pass result of the built-in rules (syntax, selectors, upgrade
	// policy) of an object that breaks none of them.
	RuleAdmission = "admission"
	// RuleInputWarning: an input the audit read that looks like a failed read, not a cluster
	// (a node inventory without nodes, ...): a warning of the cluster report.
	RuleInputWarning = finding.RuleInputWarning
)

// Auditor judges snapshots. Its fields are read, never written, by Run.
type Auditor struct {
	// Decider makes the decision on every stored object; nil decides with the built-in rules
	// only.
	Decider *decision.Decider
	// Policies are the policy packages the decider evaluates: each one that finds nothing
	// on an object is a pass result.
	Policies []policy.PolicyInfo
	// Images are registry results by image (the last registry check); nil checks none.
	Images map[string]registry.ImageResult
	// MaxResults caps the results a report lists (DefaultMaxResults when 0 or less).
	MaxResults int
	// InputWarnings are the inputs that look like a failed read (cluster.State.InputWarnings:
	// files only, never the informers of serve), each a warning of the cluster report.
	InputWarnings []string
}

// Report is the standing of one RBLNDriver (its findings and those of the nodes it owns),
// or of the cluster (Name ClusterReportName).
type Report struct {
	// Name is the ClusterReport's: the driver's name (see reportName) or ClusterReportName.
	Name string `json:"name"`
	// Driver is the RBLNDriver reported on ("" for the cluster report).
	Driver string `json:"driver,omitempty"`
	// Instance is the driver's driver.instances key (its rebellions.ai/npu.driver.instance
	// label), "" for the default driver or one not rendered by the chart.
	Instance string `json:"instance,omitempty"`
	// UID is the driver's, for the report's scope.
	UID string `json:"-"`
	// Results are at most MaxResults of the findings, the most important first (see
	// rankFindings); Omitted counts the rest. Summary counts every one.
	Results []Result `json:"results"`
	Omitted int      `json:"omitted,omitempty"`
	Summary Summary  `json:"summary"`
	// enforced counts the findings (listed or not) that fail the audit.
	enforced int
	// counts are every finding (listed or not) by policy, rule, result and enforcement, and
	// driftNodes the nodes of every drift finding by kind: what the metrics say.
	counts     map[findingKey]int
	driftNodes map[string]int
}

// findingKey is what the audit's findings metric counts by.
type findingKey struct {
	policy, rule string
	result       Status
	enforcement  policy.Enforcement
}

// Enforced counts the listed and omitted findings that fail the audit.
func (r *Report) Enforced() int { return r.enforced }

// Outcome is one pass over a snapshot.
type Outcome struct {
	// Reports: one per RBLNDriver by name, then the cluster report.
	Reports []Report `json:"reports"`
	// Summary adds up every report's.
	Summary Summary `json:"summary"`
	// Enforced counts the findings that fail the audit: fails of rules that deny.
	Enforced int `json:"enforced"`
	// ImageCheck is what the registry check covered (Checked false without one).
	ImageCheck registry.Summary `json:"imageCheck"`
}

// Run judges every RBLNDriver and the RBLNClusterPolicy of snap, and the drift of its nodes.
func (a *Auditor) Run(ctx context.Context, snap *cluster.Snapshot) (*Outcome, error) {
	drivers := snap.Drivers()
	reports := make(map[string]*builder, len(drivers)+1)
	clusterReport := a.builder(nil)
	for i := range drivers {
		d := &drivers[i]
		b := a.builder(d)
		reports[d.Name] = b
		if err := a.judgeDriver(ctx, snap, d, b); err != nil {
			return nil, err
		}
	}
	if cp := snap.ClusterPolicy(); cp != nil {
		if err := a.judgeClusterPolicy(ctx, cp, clusterReport); err != nil {
			return nil, err
		}
	}
	route := snap.Route()
	a.drift(routing.NodeDrift(route, snap.Nodes()), reports, clusterReport)
	imageCheck := a.images(route, reports, clusterReport)
	for _, w := range a.InputWarnings {
		clusterReport.add(newResult(RuleInputWarning, Warn, policy.EnforceWarn, finding.Object{}, w))
	}

	out := &Outcome{Reports: make([]Report, 0, len(reports)+1), ImageCheck: imageCheck}
	for i := range drivers {
		out.Reports = append(out.Reports, reports[drivers[i].Name].report())
	}
	out.Reports = append(out.Reports, clusterReport.report())
	for i := range out.Reports {
		out.Summary = out.Summary.Plus(out.Reports[i].Summary)
		out.Enforced += out.Reports[i].enforced
	}
	return out, nil
}

// judgeDriver decides on d as if it were created now against the snapshot's cluster (the
// index judges it in place of its stored self).
func (a *Auditor) judgeDriver(ctx context.Context, snap *cluster.Snapshot, d *v1alpha1.RBLNDriver, b *builder) error {
	v, err := a.decider().Driver(ctx, snap.Index(), decision.Request[*v1alpha1.RBLNDriver]{
		Operation: policy.OperationCreate, Object: d, Source: policy.SourceAudit})
	if err != nil {
		return fmt.Errorf("auditing RBLNDriver %q: %w", d.Name, err)
	}
	b.verdict(v, finding.Object{Kind: "RBLNDriver", Name: d.Name}, a.Policies)
	return nil
}

func (a *Auditor) judgeClusterPolicy(ctx context.Context, cp *v1alpha1.RBLNClusterPolicy, b *builder) error {
	v, err := a.decider().ClusterPolicy(ctx, decision.Request[*v1alpha1.RBLNClusterPolicy]{
		Operation: policy.OperationCreate, Object: cp, Source: policy.SourceAudit})
	if err != nil {
		return fmt.Errorf("auditing RBLNClusterPolicy %q: %w", cp.Name, err)
	}
	b.verdict(v, finding.Object{Kind: "RBLNClusterPolicy", Name: cp.Name}, a.Policies)
	return nil
}

func (a *Auditor) decider() *decision.Decider {
	if a.Decider == nil {
		return &decision.Decider{}
	}
	return a.Decider
}

// drift adds the nodes' drift, one finding per driver and kind with a sample of its nodes.
// Ties are the decision's (ConflictingNodeSelector on each tied driver), not repeated here.
func (a *Auditor) drift(drift []routing.Drift, reports map[string]*builder, clusterReport *builder) {
	type group struct {
		nodes  []string
		detail string
	}
	groups := map[[2]string]*group{}
	var keys [][2]string
	for _, d := range drift {
		if d.Kind == routing.DriftTie {
			continue
		}
		owner := d.Driver
		if _, ok := reports[owner]; !ok {
			owner = "" // no driver, or an owner label naming none: the cluster's
		}
		k := [2]string{owner, d.Kind}
		g := groups[k]
		if g == nil {
			g = &group{detail: d.Detail}
			groups[k] = g
			keys = append(keys, k)
		}
		g.nodes = append(g.nodes, d.Node)
	}
	for _, k := range keys {
		g := groups[k]
		b := clusterReport
		if k[0] != "" {
			b = reports[k[0]]
		}
		b.driftNodes[k[1]] += len(g.nodes)
		object := finding.Object{Kind: finding.KindNode, Name: g.nodes[0]}
		if k[0] != "" {
			object = finding.Object{Kind: "RBLNDriver", Name: k[0]}
		}
		f := newResult(k[1], Fail, policy.EnforceDeny, object, driftMessage(k[1], g.nodes, g.detail))
		f.Nodes = g.nodes[:min(len(g.nodes), NodeSample):min(len(g.nodes), NodeSample)]
		f.Properties = map[string]string{"nodes": strconv.Itoa(len(g.nodes))}
		if len(g.nodes) == 1 {
			f.Properties["node"] = g.nodes[0]
		}
		b.add(f)
	}
}

// driftMessage words a drift finding: the one node's detail, or the count and a sample.
func driftMessage(kind string, nodes []string, detail string) string {
	if len(nodes) == 1 {
		return "node " + nodes[0] + ": " + detail
	}
	sample := strings.Join(nodes[:min(len(nodes), NodeSample)], ", ")
	if len(nodes) > NodeSample {
		sample += fmt.Sprintf(", ... (%d in all)", len(nodes))
	}
	what := map[string]string{
		routing.DriftUnowned:             "candidate nodes that no RBLNDriver selects: they get no driver",
		routing.DriftNFDLabelMissing:     "nodes without a Node Feature Discovery label (install NFD): they join no pool",
		routing.DriftFamilyLabelMissing:  "nodes whose " + operator.LabelFamily + " label is missing or unusable: they join no pool",
		routing.DriftPoolNameCollision:   "nodes whose pool name another node defines with other labels: its DaemonSet skips them",
		routing.DriftDaemonSetNotCreated: "nodes of pools whose DaemonSet rbln-npu-operator cannot create",
		routing.DriftInvalidImageTag:     "nodes whose pool has no valid driver image",
		routing.DriftStaleOwnerLabel:     "nodes whose " + operator.LabelOwner + " label is not the driver rbln-npu-operator gives",
	}[kind]
	return fmt.Sprintf("%d %s: %s (first: %s)", len(nodes), what, sample, detail)
}

// images adds, per pool and per RSMD DaemonSet, an image its registry answered 404 for (a
// fail) or that it could not be asked about (a warning), and to the cluster report what the
// check covered. It returns that summary (registry.NotChecked without a check).
func (a *Auditor) images(route *routing.Result, reports map[string]*builder, clusterReport *builder) registry.Summary {
	if a.Images == nil {
		return registry.NotChecked()
	}
	result := func(image string) registry.ImageResult {
		if r, ok := a.Images[image]; ok {
			return r
		}
		return registry.ImageResult{Image: image, Status: registry.Warning, Reason: registry.ReasonNotChecked,
			Message: "the registry check has not asked for it yet"}
	}
	var images []string
	for _, p := range route.Pools {
		b := reports[p.Owner]
		if p.Image == "" || b == nil {
			continue
		}
		images = append(images, p.Image)
		switch r := result(p.Image); r.Status {
		case registry.NotFound:
			f := newResult(RuleImageNotFound, Fail, policy.EnforceDeny, finding.Object{Kind: "RBLNDriver", Name: p.Owner},
				fmt.Sprintf("pool %s pulls %s, which its registry does not have (%s): its %d node(s) cannot start the driver", p.Name, p.Image, r.Message, len(p.Nodes)))
			f.Properties = map[string]string{"pool": p.Name, "image": p.Image, "nodes": strconv.Itoa(len(p.Nodes))}
			b.add(f)
		case registry.Warning:
			f := newResult(RuleImageNotVerified, Warn, policy.EnforceWarn, finding.Object{Kind: "RBLNDriver", Name: p.Owner},
				fmt.Sprintf("pool %s pulls %s, which could not be verified (%s: %s): the pool proceeds, the kubelet decides whether the pull succeeds", p.Name, p.Image, r.Reason, r.Cause()))
			f.Properties = withCredentials(r, map[string]string{"pool": p.Name, "image": p.Image, "nodes": strconv.Itoa(len(p.Nodes)), "reason": string(r.Reason)})
			b.add(f)
		}
	}
	for _, s := range route.SMD {
		b := reports[s.Resource]
		if s.Image == "" || b == nil {
			continue
		}
		images = append(images, s.Image)
		switch r := result(s.Image); r.Status {
		case registry.NotFound:
			f := newResult(RuleImageNotFound, Fail, policy.EnforceDeny, finding.Object{Kind: "RBLNDriver", Name: s.Resource},
				fmt.Sprintf("the RSMD DaemonSet %s pulls %s, which its registry does not have (%s)", s.DaemonSet, s.Image, r.Message))
			f.Properties = map[string]string{"daemonSet": s.DaemonSet, "image": s.Image}
			b.add(f)
		case registry.Warning:
			f := newResult(RuleImageNotVerified, Warn, policy.EnforceWarn, finding.Object{Kind: "RBLNDriver", Name: s.Resource},
				fmt.Sprintf("the RSMD DaemonSet %s pulls %s, which could not be verified (%s: %s): it proceeds, the kubelet decides whether the pull succeeds", s.DaemonSet, s.Image, r.Reason, r.Cause()))
			f.Properties = withCredentials(r, map[string]string{"daemonSet": s.DaemonSet, "image": s.Image, "reason": string(r.Reason)})
			b.add(f)
		}
	}
	sum := registry.Summarize(images, a.Images)
	status, message := Pass, sum.String()
	if c := sum.Caveat(); c != "" {
		status, message = Warn, message+": "+c
	}
	f := newResult(RuleImageCheck, status, policy.EnforceWarn, finding.Object{}, message)
	f.Properties = map[string]string{"images": strconv.Itoa(sum.Images), "found": strconv.Itoa(sum.Found), "missing": strconv.Itoa(sum.Missing),
		"notVerified": strconv.Itoa(sum.NotVerified)}
	for why, n := range sum.NotVerifiedBy {
		f.Properties["notVerified."+string(why)] = strconv.Itoa(n)
	}
	clusterReport.add(f)
	return sum
}

// withCredentials adds to props where the credentials sent for r came from (the names of the
// pull Secrets or files, never what they hold), when any were.
func withCredentials(r registry.ImageResult, props map[string]string) map[string]string {
	if len(r.Credentials) > 0 {
		props["credentials"] = strings.Join(r.Credentials, ", ")
	}
	return props
}

// Images are the images a snapshot's pools and RSMD DaemonSets pull: what a registry check
// covers (docs/audit.md "What is judged": every image a pool pulls).
func Images(snap *cluster.Snapshot) []string {
	route := snap.Route()
	var out []string
	for _, p := range route.Pools {
		out = append(out, p.Image)
	}
	for _, s := range route.SMD {
		out = append(out, s.Image)
	}
	return slices.Compact(slices.Sorted(slices.Values(slices.DeleteFunc(out, func(s string) bool { return s == "" }))))
}

// builder collects one report.
type builder struct {
	name, driver, instance, uid string
	max                         int
	findings                    []Result
	summary                     Summary
	enforced                    int
	counts                      map[findingKey]int
	driftNodes                  map[string]int
}

// builder starts the report of d, or the cluster report when d is nil.
func (a *Auditor) builder(d *v1alpha1.RBLNDriver) *builder {
	b := &builder{name: ClusterReportName, max: a.MaxResults, counts: map[findingKey]int{}, driftNodes: map[string]int{}}
	if b.max <= 0 {
		b.max = DefaultMaxResults
	}
	if d != nil {
		b.name, b.driver, b.instance, b.uid = reportNameOf(d.Name), d.Name, d.Labels[v1alpha1.LabelInstance], string(d.UID)
	}
	return b
}

func (b *builder) add(f Result) {
	if f.Properties == nil && b.instance != "" {
		f.Properties = map[string]string{}
	}
	if b.instance != "" {
		f.Properties["instance"] = b.instance
	}
	if n, err := strconv.Atoi(f.Properties["nodes"]); err == nil && n > len(f.Nodes) {
		f.Count = n // the nodes it stands for, beyond those it lists
	}
	b.summary.add(f.Status)
	if f.Enforced() {
		b.enforced++
	}
	b.counts[findingKey{f.ReportPolicy(), f.ReportRule(), f.Status, policy.Enforcement(f.Enforcement)}]++
	b.findings = append(b.findings, f)
}

// count adds n findings the verdict did not hold (decision.MaxFindings) to the summary and the
// counts: their policy and rule are not known (counted under "").
func (b *builder) count(r Status, n int, mode policy.Enforcement) {
	if n <= 0 {
		return
	}
	for range n {
		b.summary.add(r)
	}
	if r == Fail && mode == policy.EnforceDeny {
		b.enforced += n
	}
	b.counts[findingKey{result: r, enforcement: mode}] += n
}

// verdict adds a decision's findings on subject, and a pass for each policy and for the
// built-in rules that found nothing.
func (b *builder) verdict(v *decision.Verdict, subject finding.Object, policies []policy.PolicyInfo) {
	found := map[string]bool{}
	for _, df := range v.Findings() {
		f := resultOf(df, policy.Enforcement(df.Enforcement), subject)
		found[f.ReportPolicy()] = true
		b.add(f)
	}
	b.count(Fail, v.OmittedDenials, policy.EnforceDeny)
	b.count(Warn, v.OmittedWarnings, "") // of rules that deny or warn: not known which
	b.count(Fail, v.OmittedAudit, policy.EnforceAudit)
	if !found[BuiltinPolicy] {
		b.add(newResult(RuleAdmission, Pass, policy.EnforceDeny, subject, ""))
	}
	for _, p := range policies {
		if !p.Disabled && !found[p.Package] {
			b.add(newResult(finding.RegoRule(p.Package, finding.BodyDeny), Pass, p.Enforcement, subject, ""))
		}
	}
}

func (b *builder) report() Report {
	rankFindings(b.findings)
	n, size := 0, 0
	for ; n < min(len(b.findings), b.max); n++ {
		if size += b.findings[n].encodedSize(); size > MaxReportBytes {
			break
		}
	}
	return Report{Name: b.name, Driver: b.driver, Instance: b.instance, UID: b.uid,
		Results: slices.Clip(b.findings[:n]), Omitted: len(b.findings) - n, Summary: b.summary, enforced: b.enforced,
		counts: b.counts, driftNodes: b.driftNodes}
}

// resultOf is a finding of a decision as a result of a report on subject: its status is fail,
// or warn for a warning (and a policy on trial's warn body); its enforcement that of its
// policy rule (deny when not set), warn for a built-in warning, audit for a policy on trial.
func resultOf(df decision.Finding, enforcement policy.Enforcement, subject finding.Object) Result {
	status, e := Fail, policy.EnforceDeny
	if df.Policy() != "" {
		e = cmp.Or(enforcement, policy.EnforceDeny)
	}
	switch {
	case df.Level == finding.Warn && df.Policy() == "":
		status, e = Warn, policy.EnforceWarn // a built-in warning
	case df.Level == finding.Warn:
		status = Warn
	case df.Level == finding.Audit:
		e = policy.EnforceAudit
		if finding.BodyOf(df.Rule) == finding.BodyWarn {
			status = Warn
		}
	}
	r := newResult(df.Rule, status, e, subject, df.Message)
	r.Field = df.Field
	return r
}

// rankFindings orders a report's findings as a capped list should keep them, most important
// first:
//
//  1. by what they are: failures of rules that deny (what fails the audit), errors, warnings,
//     failures and warnings of policies on trial (enforcement audit), passes;
//  2. within each, every rule's first finding before the second finding of any rule, so that
//     one rule with many findings (a missing image per pool) never pushes another rule out
//     (the stale owner labels of 10,000 nodes, one finding);
//  3. then the findings that cover more nodes first (the nodes property), then by policy,
//     rule and message.
func rankFindings(fs []Result) {
	type ranked struct {
		f             *Result
		rank, breadth int
		place         int // among the findings of its rank and rule, 0 for the first
	}
	rs := make([]ranked, len(fs))
	for i := range fs {
		rs[i] = ranked{f: &fs[i], rank: fs[i].rank(), breadth: fs[i].breadth()}
	}
	tail := func(x, y ranked) int {
		return cmp.Or(cmp.Compare(y.breadth, x.breadth), strings.Compare(x.f.ReportPolicy(), y.f.ReportPolicy()), strings.Compare(x.f.ReportRule(), y.f.ReportRule()),
			strings.Compare(x.f.Description(), y.f.Description()))
	}
	slices.SortStableFunc(rs, func(x, y ranked) int {
		return cmp.Or(cmp.Compare(x.rank, y.rank), strings.Compare(x.f.ReportPolicy(), y.f.ReportPolicy()), strings.Compare(x.f.ReportRule(), y.f.ReportRule()), tail(x, y))
	})
	for i := 1; i < len(rs); i++ {
		if rs[i].rank == rs[i-1].rank && rs[i].f.ReportPolicy() == rs[i-1].f.ReportPolicy() && rs[i].f.ReportRule() == rs[i-1].f.ReportRule() {
			rs[i].place = rs[i-1].place + 1
		}
	}
	slices.SortStableFunc(rs, func(x, y ranked) int {
		return cmp.Or(cmp.Compare(x.rank, y.rank), cmp.Compare(x.place, y.place), tail(x, y))
	})
	out := make([]Result, len(fs))
	for i := range rs {
		out[i] = *rs[i].f
	}
	copy(fs, out)
}
