package release

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/render"
	"github.com/driverguard/driverguard/routing"
)

// Objects are what a set of rendered values applies.
type Objects struct {
	// ClusterPolicy is the rendered RBLNClusterPolicy (nil for none).
	ClusterPolicy *v1alpha1.RBLNClusterPolicy
	// Drivers are the rendered RBLNDrivers in render order: the default first, then the
	// instances by key.
	Drivers []v1alpha1.RBLNDriver
	// ReleaseName is the Helm release: the current drivers it owns and no longer renders are
	// deleted (see [Owned]).
	ReleaseName string
	// Raw are the objects' JSON as they were given (post-render: as Helm sends them), by
	// RawKey; the API server's CRD validation judges them (nil: the typed objects' JSON).
	Raw map[string][]byte
}

// RawKey is the key of an object in Objects.Raw.
func RawKey(kind, name string) string { return kind + "/" + name }

// FromRender returns the objects of a render result.
func FromRender(r *render.Result, releaseName string) Objects {
	return Objects{ClusterPolicy: &r.ClusterPolicy, Drivers: r.Drivers, ReleaseName: releaseName}
}

// ClusterData is the policies' cluster view (policy.Engine): set to the cluster before the
// first object and patched after each applied one.
type ClusterData interface {
	SyncCluster(ctx context.Context, v *policy.ClusterView) error
	PatchCluster(ctx context.Context, p *policy.ClusterPatch) error
}

// Options configure Apply.
type Options struct {
	// Decider makes every decision; nil decides with the built-in rules only.
	Decider *decision.Decider
	// Data, when set, is kept equal to the cluster as the objects change it, so that policies
	// read at data.driverguard_cluster what the webhook's would at the same point.
	Data ClusterData
}

// Object is one object of the release in Helm's order.
type Object struct {
	// Kind is RBLNClusterPolicy or RBLNDriver.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Operation is CREATE, or UPDATE when the cluster holds an object of that name.
	Operation string `json:"operation"`
	// ClusterPolicy or Driver is the object; Old the stored one on UPDATE.
	ClusterPolicy    *v1alpha1.RBLNClusterPolicy `json:"-"`
	Driver           *v1alpha1.RBLNDriver        `json:"-"`
	OldClusterPolicy *v1alpha1.RBLNClusterPolicy `json:"-"`
	OldDriver        *v1alpha1.RBLNDriver        `json:"-"`
}

// Judged is an object with its verdict.
type Judged struct {
	Object
	Verdict *decision.Verdict
}

// Result is what applying the objects does.
type Result struct {
	// Objects are every object, in Helm's order, with its verdict. Denied objects are not
	// applied: the objects after them are judged without them.
	Objects []Judged
	// Deleted are the current drivers the release owns and no longer renders, sorted: Helm
	// deletes them after applying the rest.
	Deleted []string
	// Routing routes the nodes after the release (denied objects not applied, deleted ones
	// gone).
	Routing *routing.Result
	// Drivers are the RBLNDrivers after the release, sorted by name: those Routing routes.
	Drivers []*v1alpha1.RBLNDriver
	// Before routes the nodes now: by the current RBLNDrivers (Basis BasisRouting), or by
	// their owner labels when the current drivers are not known (BasisOwnerLabels).
	Before *routing.Result
	Basis  string
	// Changes are what the release does to every node (Before against Routing), by name.
	Changes []NodeChange
	// DriverLoss are the nodes that have a driver now and would get none.
	DriverLoss []NodeLoss
	// OwnerChanges are the nodes that would move from their driver now to another.
	OwnerChanges []OwnerChange
	// Drift is what is wrong with the nodes now, whatever the release does (stale owner
	// labels, ties, unowned nodes, ...; the audit reports the same): known only with the
	// current drivers, but for owner labels no RBLNDriver can be named (nil when none).
	Drift []routing.Drift
	// Sources say what the cluster was read from; InputWarnings name the inputs that look
	// like a failed read (an empty node inventory, ...).
	Sources       cluster.Sources
	InputWarnings []string
}

// NodeLoss is a node that would lose its driver.
type NodeLoss struct {
	Node string `json:"node"`
	// From is the driver its rebellions.ai/npu.driver.owner label names now.
	From string `json:"from"`
	// Reason is why it gets no driver: NoMatchingDriver or ConflictingNodeSelector.
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Message says what happens to the node: the driver it loses and why.
func (l NodeLoss) Message() string {
	return fmt.Sprintf("owned by %s now, would get no driver (%s)", l.From, cmp.Or(l.Reason, "-"))
}

// OwnerChange is a node whose driver changes.
type OwnerChange struct {
	Node string `json:"node"`
	From string `json:"from"`
	To   string `json:"to"`
}

// Order returns the objects in Helm's order (see the package documentation), each with its
// operation against cl.
func Order(objs Objects, cl *cluster.State) []Object {
	drivers := cl.Drivers()
	current := make(map[string]*v1alpha1.RBLNDriver, len(drivers))
	for i := range drivers {
		current[drivers[i].Name] = &drivers[i]
	}
	var out []Object
	if cp := objs.ClusterPolicy; cp != nil {
		o := Object{Kind: "RBLNClusterPolicy", Name: cp.Name, Operation: policy.OperationCreate, ClusterPolicy: cp}
		if old := cl.ClusterPolicy(); old != nil && old.Name == cp.Name {
			o.Operation, o.OldClusterPolicy = policy.OperationUpdate, old
		}
		out = append(out, o)
	}
	for i := range objs.Drivers {
		d := &objs.Drivers[i]
		o := Object{Kind: "RBLNDriver", Name: d.Name, Operation: policy.OperationCreate, Driver: d}
		if old, ok := current[d.Name]; ok {
			o.Operation, o.OldDriver = policy.OperationUpdate, old
		}
		out = append(out, o)
	}
	return out
}

// Owned reports whether the Helm release named release owns a stored driver: Helm's
// meta.helm.sh/release-name annotation names it, or (objects without the annotation) its
// app.kubernetes.io/instance label does and app.kubernetes.io/managed-by is Helm.
func Owned(d *v1alpha1.RBLNDriver, release string) bool {
	owner := ownerRelease(&d.ObjectMeta)
	return owner != "" && owner == release
}

// Apply judges and applies the objects in Helm's order, then deletes what the release no
// longer renders. cl is the cluster the objects are applied to (without nodes, conflicts are
// judged on the selectors alone, as the webhook does on a cluster without nodes); it is read,
// not changed.
func Apply(ctx context.Context, objs Objects, cl *cluster.State, opts Options) (*Result, error) {
	r, err := NewReplay(ctx, objs, cl, opts)
	if err != nil {
		return nil, err
	}
	for _, o := range r.Objects() {
		if _, err := r.Judge(ctx, o); err != nil {
			return nil, err
		}
	}
	return r.Finish(ctx)
}

// Replay is Apply one object at a time, for a caller that looks at the cluster between the
// objects or stops early (`policy input --name`, `policy data --name`): Judge each of
// Objects in order, then Finish. A replay is used once, by one goroutine.
type Replay struct {
	objs Objects
	cl   *cluster.State
	opts Options
	dec  *decision.Decider
	view *routing.Cluster
	res  *Result
	// before is the routing before the first object.
	before *routing.Result
}

// NewReplay builds the cluster view the objects are applied to and, with opts.Data, sets the
// policies' view to it.
func NewReplay(ctx context.Context, objs Objects, cl *cluster.State, opts Options) (*Replay, error) {
	dec := opts.Decider
	if dec == nil {
		dec = &decision.Decider{}
	}
	upcoming := make([]*v1alpha1.RBLNDriver, len(objs.Drivers))
	for i := range objs.Drivers {
		upcoming[i] = &objs.Drivers[i]
	}
	if err := checkOwnership(objs, cl); err != nil {
		return nil, err
	}
	view := routing.NewCluster(cl.Nodes(), cl.Drivers(), upcoming, routing.OptionsFor(rdsPolicy(objs.ClusterPolicy, cl.ClusterPolicy())))
	if opts.Data != nil {
		if err := opts.Data.SyncCluster(ctx, clusterView(view, cl)); err != nil {
			return nil, err
		}
	}
	return &Replay{objs: objs, cl: cl, opts: opts, dec: dec, view: view, res: &Result{Deleted: []string{}}, before: view.Route()}, nil
}

// Objects are the objects to judge, in Helm's order (see [Order]).
func (r *Replay) Objects() []Object { return Order(r.objs, r.cl) }

// Judge decides on o with the cluster as the objects judged before it left it, and applies
// it when it is allowed.
func (r *Replay) Judge(ctx context.Context, o Object) (*decision.Verdict, error) {
	v, rules, err := schemaVerdicts(ctx, o, r.objs.Raw[RawKey(o.Kind, o.Name)])
	if err != nil {
		return nil, fmt.Errorf("judging %s %q: %w", o.Kind, o.Name, err)
	}
	switch {
	case v != nil: // the API server refuses it before any webhook sees it
	case o.Kind == "RBLNClusterPolicy":
		v, err = r.dec.ClusterPolicy(ctx, decision.Request[*v1alpha1.RBLNClusterPolicy]{
			Operation: o.Operation, Object: o.ClusterPolicy, OldObject: o.OldClusterPolicy, Source: policy.SourceRender})
	default:
		v, err = r.dec.Driver(ctx, r.view, decision.Request[*v1alpha1.RBLNDriver]{
			Operation: o.Operation, Object: o.Driver, OldObject: o.OldDriver, Source: policy.SourceRender})
	}
	if err != nil {
		return nil, fmt.Errorf("judging %s %q: %w", o.Kind, o.Name, err)
	}
	if rules != nil && v.Allowed() {
		v = rules // the CRD's rules refuse what the webhook's let through: the API server's word stands
	}
	r.res.Objects = append(r.res.Objects, Judged{Object: o, Verdict: v})
	if !v.Allowed() {
		return v, nil
	}
	if err := apply(ctx, r.view, o, r.opts.Data); err != nil {
		return nil, err
	}
	return v, nil
}

// Finish deletes the current drivers the release owns and no longer renders, and routes the
// nodes after the release.
func (r *Replay) Finish(ctx context.Context) (*Result, error) {
	res, objs, cl := r.res, r.objs, r.cl
	rendered := make(map[string]bool, len(objs.Drivers))
	for _, d := range objs.Drivers {
		rendered[d.Name] = true
	}
	current := cl.Drivers()
	for i := range current {
		d := &current[i]
		if rendered[d.Name] || !Owned(d, objs.ReleaseName) || slices.Contains(res.Deleted, d.Name) {
			continue
		}
		changes := r.view.Delete(d.Name)
		res.Deleted = append(res.Deleted, d.Name)
		if r.opts.Data != nil {
			if err := r.opts.Data.PatchCluster(ctx, &policy.ClusterPatch{DeletedDrivers: []string{d.Name}, Nodes: changes}); err != nil {
				return nil, err
			}
		}
	}
	slices.Sort(res.Deleted)
	res.Routing, res.Drivers = r.view.Route(), r.view.Drivers()
	res.Before, res.Basis = r.before, BasisRouting
	if !cl.DriversKnown() {
		res.Before, res.Drift = labelRouting(r.before)
		res.Basis = BasisOwnerLabels
	} else {
		res.Drift = routing.NodeDrift(r.before, cl.Nodes())
	}
	res.Changes = changes(res.Before, res.Routing, res.Basis == BasisRouting)
	res.Sources, res.InputWarnings = cl.Sources(), cl.InputWarnings()
	res.DriverLoss, res.OwnerChanges = lossesOf(res.Changes)
	return res, nil
}

// apply makes an allowed object part of the cluster.
func apply(ctx context.Context, view *routing.Cluster, o Object, data ClusterData) error {
	p := &policy.ClusterPatch{}
	switch o.Kind {
	case "RBLNClusterPolicy":
		p.ClusterPolicy = o.ClusterPolicy
	default:
		changes, err := view.Apply(o.Driver)
		if err != nil {
			return err
		}
		p.Drivers, p.Nodes = []*v1alpha1.RBLNDriver{o.Driver}, changes
	}
	if data == nil {
		return nil
	}
	return data.PatchCluster(ctx, p)
}

// clusterView is the policies' view of the cluster before the release.
func clusterView(view *routing.Cluster, cl *cluster.State) *policy.ClusterView {
	drivers := cl.Drivers()
	v := &policy.ClusterView{ClusterPolicy: cl.ClusterPolicy(), Drivers: make([]*v1alpha1.RBLNDriver, len(drivers))}
	for i := range drivers {
		v.Drivers[i] = &drivers[i]
	}
	labels := make(map[string]map[string]string, len(cl.Nodes()))
	for _, n := range cl.Nodes() {
		labels[n.Name] = n.Labels
	}
	for _, n := range view.Nodes() {
		v.Nodes = append(v.Nodes, policy.ClusterNode{Name: n.Name, Labels: labels[n.Name], Owner: n.Owner, Pool: n.Pool})
	}
	return v
}

// rdsPolicy is the RBLNClusterPolicy whose spec.rds the operator routes by once the release is
// applied: the rendered one when it sets spec.rds, else the cluster's. The chart renders no
// spec.rds, and Helm's three-way merge (Helm 3) or server-side apply (Helm 4) keeps a field
// another manager set when the rendered manifest never held it.
func rdsPolicy(rendered, current *v1alpha1.RBLNClusterPolicy) *v1alpha1.RBLNClusterPolicy {
	if rendered != nil && rendered.Spec.RDS != nil {
		return rendered
	}
	return current
}
