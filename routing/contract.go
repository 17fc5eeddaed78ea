package routing

// The `driverguard route -o json` contract (docs/routing.md "`route -o json` contract"): exactly these keys, every list sorted
// by name and never null. Result carries more detail; Contract drops it so the contract stays
// stable when Result grows.

// ContractResult is the stable JSON form of a Result.
type ContractResult struct {
	Nodes     []ContractNode     `json:"nodes"`
	Conflicts []ContractConflict `json:"conflicts"`
	Invalid   []ContractInvalid  `json:"invalid"`
	Pools     []ContractPool     `json:"pools"`
}

// ContractNode is one node: its resulting owner label value ("" for none) and reason.
type ContractNode struct {
	Name   string `json:"name"`
	Owner  string `json:"owner"`
	Pool   string `json:"pool"`
	Image  string `json:"image"`
	Reason string `json:"reason"`
}

// ContractConflict is a tied resource set with a sorted sample of its nodes.
type ContractConflict struct {
	Resources []string `json:"resources"`
	Nodes     []string `json:"nodes"`
}

// ContractInvalid is a resource that takes no part in routing.
type ContractInvalid struct {
	Resource string `json:"resource"`
	Reason   string `json:"reason"`
}

// ContractPool is one driver DaemonSet.
type ContractPool struct {
	Name      string   `json:"name"`
	DaemonSet string   `json:"daemonSet"`
	Owner     string   `json:"owner"`
	Image     string   `json:"image"`
	Nodes     []string `json:"nodes"`
}

// Contract returns the stable JSON form of r.
func (r *Result) Contract() ContractResult {
	out := ContractResult{
		Nodes:     make([]ContractNode, len(r.Nodes)),
		Conflicts: make([]ContractConflict, len(r.Conflicts)),
		Invalid:   make([]ContractInvalid, len(r.Invalid)),
		Pools:     make([]ContractPool, len(r.Pools)),
	}
	for i, n := range r.Nodes {
		out.Nodes[i] = ContractNode{Name: n.Name, Owner: n.Owner, Pool: n.Pool, Image: n.Image, Reason: n.Reason}
	}
	for i, c := range r.Conflicts {
		out.Conflicts[i] = ContractConflict{Resources: nonNil(c.Resources), Nodes: nonNil(c.Nodes)}
	}
	for i, inv := range r.Invalid {
		out.Invalid[i] = ContractInvalid{Resource: inv.Resource, Reason: inv.Reason}
	}
	for i, p := range r.Pools {
		out.Pools[i] = ContractPool{Name: p.Name, DaemonSet: p.DaemonSet, Owner: p.Owner, Image: p.Image, Nodes: nonNil(p.Nodes)}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
