package routing

import (
	"fmt"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
)

// Options are the cluster-wide settings rbln-npu-operator routes by.
type Options struct {
	// RDS is the RBLNClusterPolicy's spec.rds.enabled: nodes labelled
	// rebellions.ai/rds.present=true then run pools of their own (<pool>-rds).
	RDS bool
}

// OptionsFor reads the options from the RBLNClusterPolicy the operator reads (nil: none).
func OptionsFor(cp *v1alpha1.RBLNClusterPolicy) Options {
	return Options{RDS: cp != nil && cp.Spec.RDS != nil && cp.Spec.RDS.Enabled}
}

// nodePool is the pool of a candidate node as the operator composes it from the node's labels,
// read once, or why it has none.
type nodePool struct {
	pool operator.Pool
	err  *operator.PoolError
}

// reasonOf is the node reason of a node without a pool.
func reasonOf(err *operator.PoolError) string {
	if err.FamilyProblem() {
		return ReasonDriverFamilyLabelMissing
	}
	return ReasonNFDLabelMissing
}

// driverPools collects the pools of one driver from its nodes, visited in name order, as the
// operator does (operator.PoolSet): the first node that composes a pool name defines the pool.
type driverPools struct {
	ix     *Index
	d      *driver
	set    operator.PoolSet
	byName map[string]*Pool
}

func (ix *Index) newDriverPools(d *driver) *driverPools {
	return &driverPools{ix: ix, d: d, byName: map[string]*Pool{}}
}

// add puts node n into its pool and fills nr's pool, image, reason and detail (a reason only
// when nr has none yet). It reports whether the node joined a pool (a DaemonSet runs on it).
func (dp *driverPools) add(n int32, nr *NodeResult) bool {
	np := &dp.ix.pools[dp.ix.nodePool[n]]
	setReason := func(reason, detail string) {
		if nr.Reason == "" {
			nr.Reason, nr.Detail = reason, detail
		}
	}
	if np.err != nil {
		setReason(reasonOf(np.err), np.err.Error())
		return false
	}
	defined, collides := dp.set.Add(np.pool)
	p := dp.byName[defined.Name]
	if p == nil {
		p = newPool(dp.d, defined)
		dp.byName[defined.Name] = p
	}
	if collides {
		setReason(ReasonPoolNameCollision, fmt.Sprintf(
			"its labels compose the pool name %q, which node %s (the first by name) defines with %s=%q, %s=%q, %s=%q, %s=%q: the pool's DaemonSet %s selects those values, so rbln-npu-operator runs no driver on this node; give the nodes distinct kernels or relabel one of them",
			defined.Name, p.Nodes[0], operator.LabelFamily, defined.Family, operator.LabelOSID, defined.OSID, operator.LabelOSVersion, defined.OSVersion, operator.LabelKernel, defined.Kernel, p.DaemonSet))
		return false
	}
	p.Nodes = append(p.Nodes, dp.ix.nodes[n].Name)
	nr.Pool, nr.Image = p.Name, p.Image
	if p.Reason != "" {
		setReason(p.Reason, p.Detail)
	}
	return true
}

// sorted returns the pools by name.
func (dp *driverPools) sorted() []Pool {
	out := make([]Pool, 0, len(dp.byName))
	for _, p := range dp.byName {
		out = append(out, *p)
	}
	sortPools(out)
	return out
}

func newPool(d *driver, pl operator.Pool) *Pool {
	p := &Pool{
		Name:         pl.Name,
		DaemonSet:    operator.DriverDaemonSet(d.name, pl.Name),
		Owner:        d.name,
		NodeSelector: pl.NodeSelector(d.name),
		Labels:       pl,
	}
	img, err := DriverImage(&d.obj.Spec, pl)
	if err != nil {
		p.Reason, p.Detail = ReasonInvalidImageTag, err.Error()
	}
	p.Image = img
	if problem := operator.DaemonSetNameProblem(d.name, pl.Name); problem != "" {
		p.Reason, p.Detail = ReasonDaemonSetNotCreated, fmt.Sprintf(
			"the API server refuses the DaemonSet rbln-npu-operator composes for this pool: %s; the operator's reconcile of %s stops at it, so the pool gets no driver", problem, d.name)
	}
	return p
}
