package action

import (
	"context"
	"errors"
	"time"

	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/registry"
)

// Audit runs the audit of the cluster once (`driverguard audit`, docs/audit.md): every stored
// RBLNDriver and the RBLNClusterPolicy judged as serve's audit judges them, with the drift of
// the nodes and, with CheckImages, every image the pools pull.
type Audit struct {
	cfg *Configuration
	// Policy are the policies (the bundled library plus Dirs), with their enforcement.
	Policy Policy
	// PolicyFailOpen judges an object whose policy evaluation fails without its policies
	// (with a warning), as serve's audit does with --policy-fail-open; the default fails the
	// audit (it could not run).
	PolicyFailOpen bool
	// Cluster are the files of the cluster (Workloads unused); Live, or a Target.Kubeconfig,
	// reads the cluster instead.
	Cluster cluster.Files
	Live
	// RegistryCheck asks each registry for every image a pool or RSMD DaemonSet pulls: live,
	// with the drivers' pull Secrets.
	RegistryCheck
	// MaxResults caps the results a report lists (audit.DefaultMaxResults when 0).
	MaxResults int
}

// NewAudit returns an Audit.
func NewAudit(cfg *Configuration) *Audit { return &Audit{cfg: cfg} }

// Run audits. The result says whether a rule that denies fails (Outcome.Enforced).
func (a *Audit) Run(ctx context.Context) (*AuditResult, error) {
	files := a.Cluster
	files.Workloads = ""
	src, err := a.Live.resolve(files, false)
	if err != nil {
		return nil, err
	}
	if !src.live && a.Cluster.Nodes == "" && a.Cluster.Drivers == "" {
		return nil, errors.New("nothing to audit: read the cluster with --live or --kubeconfig, or give it as files with --nodes and --drivers (and --cluster-policy)")
	}
	if err := a.RegistryCheck.check(src.live); err != nil {
		return nil, err
	}
	creds, err := a.RegistryCheck.credentials(src)
	if err != nil {
		return nil, err
	}
	if err := oneStdin(stdinUser{"--nodes", a.Cluster.Nodes}, stdinUser{"--drivers", a.Cluster.Drivers}, stdinUser{"--cluster-policy", a.Cluster.ClusterPolicy}); err != nil {
		return nil, err
	}
	engine, err := a.cfg.engine(ctx, a.Policy)
	if err != nil {
		return nil, err
	}
	// The audit judges what is stored: a node keeps the labels the drivers' selectors, the
	// operator and the policies read (as serve's cluster view does).
	st, err := a.cfg.readCluster(ctx, src, cluster.LiveOptions{UserAgent: "driverguard-audit", CompactNodes: true, NodeLabels: engine.NodeLabelKeys()})
	if err != nil {
		return nil, err
	}
	static := cluster.NewStatic(st)
	static.SyncTo(engine)
	snap, err := static.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	auditor := &audit.Auditor{Decider: &decision.Decider{Policy: engine, PolicyFailOpen: a.PolicyFailOpen}, Policies: engine.Policies(), MaxResults: a.MaxResults,
		InputWarnings: st.InputWarnings()}
	if a.CheckImages {
		auditor.Images = a.run(ctx, creds, audit.Images(snap), registry.SecretsOf(snap.Drivers()), snap.Route())
	}
	out, err := auditor.Run(ctx, snap)
	if err != nil {
		return nil, err
	}
	return &AuditResult{Outcome: out, Reports: audit.ClusterReports(out, time.Now()), Inputs: st.Sources(), InputWarnings: st.InputWarnings()}, nil
}
