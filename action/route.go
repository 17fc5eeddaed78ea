package action

import (
	"context"
	"errors"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/registry"
	"github.com/driverguard/driverguard/routing"
)

// Route decides the owner, pool, DaemonSet and image of every node from RBLNDrivers and Nodes
// read from files (`driverguard route`).
type Route struct {
	cfg *Configuration
	// Drivers is any stream of RBLNDriver documents; Nodes a node inventory. Both are needed.
	Drivers, Nodes string
	// ClusterPolicy is the RBLNClusterPolicy file, optional: the operator routes by its
	// spec.rds.enabled.
	ClusterPolicy string
	// RegistryCheck asks the registry for every composed image, with the user's credentials.
	RegistryCheck
}

// NewRoute returns a Route.
func NewRoute(cfg *Configuration) *Route { return &Route{cfg: cfg} }

// RouteResult is the routing of the nodes and, with CheckImages, the registry's answers.
type RouteResult struct {
	Routing *routing.Result
	Images  []registry.ImageResult
	// InputWarnings are the inputs that look like a failed read (a --nodes file without nodes,
	// ...): the route JSON contract has no place for them, the command says them on stderr.
	InputWarnings []string
	// ImageCheck is what the registry check covered (Checked false without CheckImages).
	ImageCheck registry.Summary
}

// Run routes the nodes.
func (r *Route) Run(ctx context.Context) (*RouteResult, error) {
	if r.Drivers == "" || r.Nodes == "" {
		return nil, errors.New("both --drivers and --nodes are required")
	}
	if err := r.RegistryCheck.check(false); err != nil {
		return nil, err
	}
	if err := oneStdin(stdinUser{"--drivers", r.Drivers}, stdinUser{"--nodes", r.Nodes}, stdinUser{"--cluster-policy", r.ClusterPolicy}); err != nil {
		return nil, err
	}
	drivers, err := cluster.ReadDrivers(ctx, r.Drivers, r.cfg.readOptions())
	if err != nil {
		return nil, err
	}
	nodes, err := cluster.ReadNodes(ctx, r.Nodes, r.cfg.readOptions())
	if err != nil {
		return nil, err
	}
	var policies []v1alpha1.RBLNClusterPolicy
	if r.ClusterPolicy != "" {
		if policies, err = cluster.ReadClusterPolicies(ctx, r.ClusterPolicy, r.cfg.readOptions()); err != nil {
			return nil, err
		}
	}
	st := cluster.FromLists(nodes, drivers, policies, nil)
	st.SetSources(cluster.Sources{
		Nodes:   cluster.Source{Given: true, From: "--nodes " + r.Nodes, Count: len(nodes)},
		Drivers: cluster.Source{Given: true, From: "--drivers " + r.Drivers, Count: len(drivers)},
	})
	res := &RouteResult{Routing: routing.Route(drivers, nodes, routing.OptionsFor(st.ClusterPolicy())), InputWarnings: st.InputWarnings(), ImageCheck: registry.NotChecked()}
	if r.CheckImages {
		creds, err := r.RegistryCheck.credentials(clusterSource{})
		if err != nil {
			return nil, err
		}
		res.Images, res.ImageCheck = registry.Check(ctx, res.Routing, r.options(), creds.keys(ctx, registry.SecretsOf(drivers), res.Routing))
	}
	return res, nil
}
